package cli

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestToolList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"Read,Edit"}, []string{"Read", "Edit"}},
		{[]string{"Bash(git log:*) Edit", "mcp__srv__tool"}, []string{"Bash(git log:*)", "Edit", "mcp__srv__tool"}},
		{[]string{"Bash(npm run test, lint),Read(./src/**)"}, []string{"Bash(npm run test, lint)", "Read(./src/**)"}},
		{[]string{"", " , "}, nil},
	}
	for _, tt := range tests {
		if got := ToolList(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ToolList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func parseClaude(t *testing.T, args ...string) *ClaudeFlags {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var af AgentFlags
	var cf ClaudeFlags
	af.Register(fs)
	cf.Register(fs)
	if _, err := ParseInterspersed(fs, args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &cf
}

func TestWantsPrint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		terminal bool
		want     bool
	}{
		{[]string{"-p", "hi"}, true, true},
		{[]string{"hi"}, false, false},
		{[]string{"--output-format=stream-json", "--verbose", "--input-format=stream-json"}, false, true},
		{[]string{"--output-format", "json"}, false, true},
		{[]string{"--output-format", "json"}, true, false},
		{[]string{"--output-format", "text"}, false, false},
	}
	for _, tt := range tests {
		if got := parseClaude(t, tt.args...).WantsPrint(tt.terminal); got != tt.want {
			t.Errorf("%q terminal=%v: print %v, want %v", tt.args, tt.terminal, got, tt.want)
		}
	}
}

// Every flag the Agent SDK, cc-connect and wechat-claude-code write
// parses, in both spellings; the ones not honoured say so, once each.
func TestClaudeCodeFlagsParse(t *testing.T) {
	t.Parallel()
	cf := parseClaude(t,
		"--output-format", "stream-json", "--verbose", "--input-format=stream-json",
		"--thinking=adaptive", "--max-thinking-tokens=2048", "--effort=high", "--max-turns=3",
		"--max-budget-usd=1.5", "--model=m", "--betas=a,b", "--json-schema={}", "--debug-file=/tmp/x",
		"--debug", "--permission-prompt-tool=stdio", "--continue", "--allowedTools=Read,Edit",
		"--disallowedTools=Bash", "--tools=Read", "--mcp-config={}", "--setting-sources=", "--strict-mcp-config",
		"--permission-mode=default", "--allow-dangerously-skip-permissions", "--fallback-model=f",
		"--include-hook-events", "--include-partial-messages", "--add-dir=/tmp", "--await-initialize",
		"--fork-session", "--resume-session-at=u", "--session-id=s", "--no-session-persistence",
		"--replay-user-messages", "--append-system-prompt", "x", "--system-prompt=y", "-d", "-n", "name",
		"--max-context-tokens=1000", "--plugin-dir=/p", "--ide",
	)
	if !cf.Tools.Given || cf.Tools.Value != "Read" || !cf.SettingSources.Given || cf.SettingSources.Value != "" {
		t.Errorf("--tools %+v --setting-sources %+v", cf.Tools, cf.SettingSources)
	}
	notes := strings.Join(cf.Notes(), "\n")
	for _, n := range []string{"--plugin-dir", "--ide"} {
		if strings.Count(notes, "sluice: "+strings.TrimSpace(n)+" is accepted") != 1 {
			t.Errorf("notes do not mention %s once:\n%s", n, notes)
		}
	}
	if strings.Contains(notes, "--model") || strings.Contains(notes, "--system-prompt") ||
		strings.Contains(notes, "--debug") || strings.Contains(notes, "--setting-sources") || strings.Contains(notes, "--fork-session") {
		t.Errorf("notes mention an honoured flag:\n%s", notes)
	}
	// Honoured since: no note.
	for _, n := range []string{"--betas", "--effort", "--thinking", "--name", "--fallback-model", "--include-hook-events",
		"--await-initialize", "--resume-session-at", "--settings", "--mcp-debug"} {
		if strings.Contains(notes, n+" ") {
			t.Errorf("notes mention %s:\n%s", n, notes)
		}
	}
}
