package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// agentFlagGroups are the agent's flags as its -h lists them, by what
// they are for. Each entry names one flag's spellings, the first one's
// usage shown. Claude Code's flags that sluice accepts and ignores are in
// none: `sluice help claude-flags` lists them (ClaudeFlagsHelp).
var agentFlagGroups = []struct {
	title string
	flags []string
}{
	{"Model", []string{"provider", "model", "base-url", "fallback-model", "max-tokens", "thinking",
		"thinking-budget max-thinking-tokens", "effort", "context-window max-context-tokens", "betas", "demo-delay"}},
	{"Sessions", []string{"c continue", "r resume", "fork-session", "resume-session-at", "session-id", "n name",
		"no-session-persistence", "cwd", "add-dir", "auto-compact"}},
	{"Permissions and tools", []string{"permission-mode", "dangerously-skip-permissions",
		"allow-dangerously-skip-permissions", "allowed-tools allowedTools", "disallowed-tools disallowedTools",
		"tools", "restricted", "mcp-config", "strict-mcp-config"}},
	{"Child processes' environment", []string{"child-env", "child-env-exclude", "child-env-include",
		"child-env-include-only", "child-env-set"}},
	{"Prompt, subagents and settings", []string{"system-prompt", "system-prompt-file", "append-system-prompt",
		"append-system-prompt-file", "agents", "agent", "settings", "setting-sources"}},
	{"Print mode", []string{"p print", "output-format", "input-format", "include-partial-messages",
		"replay-user-messages", "include-hook-events", "await-initialize", "initialize-fields",
		"permission-prompt-tool", "json-schema", "max-turns", "max-budget-usd"}},
	{"Diagnostics", []string{"d debug", "debug-file", "mcp-debug", "verbose", "stall-warning",
		"stream-idle-timeout", "v version"}},
}

// AgentFlagsHelp writes the agent's flags of fs (AgentFlags and
// ClaudeFlags registered) in groups.
func AgentFlagsHelp(w io.Writer, fs *flag.FlagSet) {
	for _, g := range agentFlagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, spellings := range g.flags {
			names := strings.Fields(spellings)
			// The usage of a spelling that is not "same as" another.
			var f *flag.Flag
			for _, n := range names {
				if g := fs.Lookup(n); g != nil && (f == nil || strings.Contains(f.Usage, "same as")) {
					f = g
				}
			}
			if f == nil {
				continue
			}
			var head []string
			for _, n := range names {
				if len(n) == 1 {
					head = append(head, "-"+n)
				} else {
					head = append(head, "--"+n)
				}
			}
			line := "  " + strings.Join(head, ", ")
			kind, usage := flag.UnquoteUsage(f)
			if kind != "" {
				line += " " + kind
			}
			if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "[]" && !strings.Contains(usage, "default") {
				usage += fmt.Sprintf(" (default %q)", d)
			}
			fmt.Fprintf(w, "%s\n      %s\n", line, usage)
		}
	}
	fmt.Fprintln(w, "\nClaude Code's other flags are accepted and ignored: sluice help claude-flags")
}

// ClaudeFlagsHelp writes the Claude Code flags that sluice accepts and
// ignores, each with why.
func ClaudeFlagsHelp(w io.Writer) {
	fmt.Fprintln(w, "Claude Code flags that sluice accepts, so that command lines written for Claude Code run,")
	fmt.Fprintln(w, "and ignores. Each one given is named on stderr with the reason.")
	fmt.Fprintln(w)
	names := make([]string, 0, len(acceptedOnly))
	width := 0
	for n := range acceptedOnly {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		fmt.Fprintf(w, "  %-*s %s\n", width+2, dash+n, acceptedOnly[n])
	}
}
