package cli

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestAgentFlagsHelp: every flag of the agent is either in a group of its
// -h or among the Claude Code flags accepted and ignored, never both, and
// only the second list names the ignored ones.
func TestAgentFlagsHelp(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var af AgentFlags
	var cf ClaudeFlags
	af.Register(fs)
	cf.Register(fs)

	grouped := map[string]bool{}
	for _, g := range agentFlagGroups {
		for _, spellings := range g.flags {
			for _, n := range strings.Fields(spellings) {
				if fs.Lookup(n) == nil {
					t.Errorf("group %s names %q, which is no flag", g.title, n)
				}
				if grouped[n] {
					t.Errorf("%q is in two groups", n)
				}
				grouped[n] = true
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		_, ignored := acceptedOnly[f.Name]
		switch {
		case grouped[f.Name] && ignored:
			t.Errorf("--%s is both listed and ignored", f.Name)
		case !grouped[f.Name] && !ignored:
			t.Errorf("--%s is in no group of the help and not among the ignored flags", f.Name)
		}
	})
	for n := range acceptedOnly {
		if fs.Lookup(n) == nil {
			t.Errorf("ignored flag %q is not registered", n)
		}
	}

	var help, claude bytes.Buffer
	AgentFlagsHelp(&help, fs)
	ClaudeFlagsHelp(&claude)
	for n := range acceptedOnly {
		if strings.Contains(help.String(), "--"+n+"\n") || strings.Contains(help.String(), "--"+n+" ") {
			t.Errorf("the agent's help lists the ignored --%s", n)
		}
		if !strings.Contains(claude.String(), "-"+n+" ") {
			t.Errorf("claude-flags does not list --%s", n)
		}
	}
	// Spellings of one flag are one entry, with the long one's usage.
	if !strings.Contains(help.String(), "\n  -c, --continue\n      continue the most recent session of this directory\n") {
		t.Errorf("the help shows an alias's usage:\n%s", help.String())
	}
}
