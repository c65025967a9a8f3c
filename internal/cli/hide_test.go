package cli

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/tool"
)

// A tool disallowed as a whole is not offered to the model (Claude Code
// 2.1.328 leaves Bash out of the request's tools with --disallowedTools
// Bash); one disallowed with a pattern stays offered.
func TestRulesHideFrom(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	for _, tc := range []struct {
		deny    []string
		offered map[string]bool
	}{
		{deny: []string{"Bash"}, offered: map[string]bool{"Bash": false, "Read": true, "Agent": true}},
		{deny: []string{"Bash(rm:*)"}, offered: map[string]bool{"Bash": true, "Read": true}},
		{deny: []string{"Read", "Task"}, offered: map[string]bool{"Read": false, "Glob": true, "Bash": true, "Agent": false}},
	} {
		rules, err := ParseRules(nil, tc.deny, wd)
		if err != nil {
			t.Fatal(err)
		}
		o := agent.Options{WorkDir: wd, Subagents: []agent.Subagent{}}
		rules.HideFrom(&o)
		names := []string{}
		for _, tl := range o.Tools {
			names = append(names, tl.Name())
		}
		for name, want := range tc.offered {
			got := slices.Contains(names, name)
			if name == "Agent" {
				got = o.Subagents != nil
			}
			if got != want {
				t.Errorf("deny %q: %s offered %v, want %v (tools %q)", tc.deny, name, got, want, names)
			}
		}
	}
	// An MCP server's tools go with the server's name.
	rules, _ := ParseRules(nil, []string{"mcp__srv"}, wd)
	o := agent.Options{WorkDir: wd, ExtraTools: []tool.Tool{namedTool{name: "mcp__srv__a"}, namedTool{name: "mcp__other__b"}}}
	rules.HideFrom(&o)
	if len(o.ExtraTools) != 1 || o.ExtraTools[0].Name() != "mcp__other__b" {
		t.Errorf("extra tools after deny mcp__srv: %v", o.ExtraTools)
	}
}

// namedTool is a tool of which only the name is asked.
type namedTool struct {
	tool.Tool
	name string
}

func (n namedTool) Name() string { return n.name }
