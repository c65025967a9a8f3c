package cli

import (
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

func TestRules(t *testing.T) {
	t.Parallel()
	call := func(name string, input map[string]string) agent.ToolCall {
		b, _ := json.Marshal(input)
		return agent.ToolCall{Name: name, Input: b}
	}
	bash := func(cmd string) agent.ToolCall { return call("Bash", map[string]string{"command": cmd}) }
	tests := []struct {
		allow, deny []string
		call        agent.ToolCall
		want        protocol.Decision
	}{
		{[]string{"Bash(git log:*)"}, nil, bash("git log --oneline"), protocol.DecisionAllow},
		{[]string{"Bash(git log:*)"}, nil, bash("git logx"), ""},
		{[]string{"Bash(git log:*)"}, nil, bash("git log && rm -rf /"), ""},
		{[]string{"Bash(git log:*)", "Bash(npm test)"}, nil, bash("git log && npm test"), protocol.DecisionAllow},
		{[]string{"Bash(npm run *)"}, nil, bash("npm run lint"), protocol.DecisionAllow},
		{[]string{"Bash"}, []string{"Bash(rm:*)"}, bash("ls && rm -rf x"), protocol.DecisionDeny},
		{nil, []string{"Bash"}, bash("ls"), protocol.DecisionDeny},
		{[]string{"Read(./src/**)"}, nil, call("Read", map[string]string{"file_path": "/w/src/a/b.go"}), protocol.DecisionAllow},
		{[]string{"Read(./src/**)"}, nil, call("Read", map[string]string{"file_path": "/w/etc/x"}), ""},
		{[]string{"Read(./src/**)"}, nil, call("Grep", map[string]string{"path": "src"}), protocol.DecisionAllow},
		{[]string{"Edit(*.md)"}, nil, call("Write", map[string]string{"file_path": "/w/docs/a.md"}), protocol.DecisionAllow},
		{[]string{"Edit"}, nil, call("Edit", map[string]string{"file_path": "x"}), protocol.DecisionAllow},
		{[]string{"Read(//etc/**)"}, nil, call("Read", map[string]string{"file_path": "/etc/hosts"}), protocol.DecisionAllow},
		{[]string{"mcp__srv"}, nil, call("mcp__srv__tool", nil), protocol.DecisionAllow},
		{[]string{"mcp__srv__tool"}, nil, call("mcp__srv__other", nil), ""},
		{[]string{"mcp__srv__*"}, nil, call("mcp__srv__other", nil), protocol.DecisionAllow},
		{[]string{"WebFetch(domain:example.com)"}, nil, call("WebFetch", map[string]string{"url": "https://example.com/x"}), protocol.DecisionAllow},
		// Read-only commands run without a rule; others, and tricks, do not.
		{nil, nil, bash("ls -la && git status | head -5"), protocol.DecisionAllow},
		{nil, nil, bash("echo hi > file"), ""},
		{nil, nil, bash("echo $(rm -rf x)"), ""},
		{nil, nil, bash("find . -delete"), ""},
		{nil, nil, bash("git push"), ""},
		{nil, nil, bash("touch x"), ""},
		{nil, nil, bash("cat a | sh"), ""},
	}
	for _, tt := range tests {
		r, err := ParseRules(tt.allow, tt.deny, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Decide(tt.call).Decision; got != tt.want {
			t.Errorf("allow %q deny %q, %s %s: %q, want %q", tt.allow, tt.deny, tt.call.Name, tt.call.Input, got, tt.want)
		}
	}
}

// TestExactBash: a command allowed exactly as written runs without asking,
// and nothing else does: not the command with more appended, and not when
// a deny rule covers it.
func TestExactBash(t *testing.T) {
	t.Parallel()
	const loop = `for i in 1 2; do echo "step $i"; sleep 0.4; done`
	bash := func(cmd string) agent.ToolCall {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return agent.ToolCall{Name: "Bash", Input: b}
	}
	for _, tc := range []struct {
		deny []string
		cmd  string
		want protocol.Decision
	}{
		{nil, loop, protocol.DecisionAllow},
		{nil, " " + loop + "\n", protocol.DecisionAllow},
		{nil, loop + "; rm -rf x", ""},
		{nil, "sleep 1", ""},
		{[]string{"Bash(sleep:*)"}, loop, protocol.DecisionDeny},
	} {
		r, err := ParseRules(nil, tc.deny, "/w")
		if err != nil {
			t.Fatal(err)
		}
		r.ExactBash = []string{loop}
		if got := r.Decide(bash(tc.cmd)).Decision; got != tc.want {
			t.Errorf("deny %q, %q: %q, want %q", tc.deny, tc.cmd, got, tc.want)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash(git log:*)", "Read(./src/**)", "mcp__a__b", "Edit(", "(x)"} {
		f.Add(s, "git log -1")
	}
	f.Fuzz(func(t *testing.T, rule, cmd string) {
		r, err := ParseRules([]string{rule}, []string{rule}, "/w")
		if err != nil {
			return
		}
		b, _ := json.Marshal(map[string]string{"command": cmd, "file_path": cmd})
		for _, name := range []string{"Bash", "Read", "Edit", "mcp__a__b"} {
			r.Decide(agent.ToolCall{Name: name, Input: b})
		}
	})
}
