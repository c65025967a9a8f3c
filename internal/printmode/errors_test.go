package printmode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// ccRecording is one failure class as Claude Code 2.1.328 ended it, run
// with each output format (testdata/claude-code/errors, recorded with
// record.mjs and normalise.py there).
type ccRecording struct {
	Text struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	} `json:"text"`
	JSON       ccLines `json:"json"`
	StreamJSON ccLines `json:"stream_json"`
}

type ccLines struct {
	ExitCode int              `json:"exit_code"`
	Lines    []map[string]any `json:"lines"`
}

func readRecording(t *testing.T, class string) ccRecording {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", "errors", class+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r ccRecording
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", class, err)
	}
	return r
}

// resultFields are the result line's fields a client decides on: what
// the AI SDK's provider and the Agent SDK's users read.
var resultFields = []string{"subtype", "is_error", "terminal_reason", "api_error_status", "api_error_type", "stop_reason"}

// apiErrorFields are the fields of the assistant line of an API failure.
var apiErrorFields = []string{"error", "is_api_error_message", "api_error_status", "api_error_type", "parent_tool_use_id"}

// Every failure class ends as Claude Code ends it, in each output format:
// the exit code; the result's subtype, is_error, terminal_reason, status
// and type, and which of result and errors it has; after an API failure,
// the assistant line saying "API Error: STATUS MESSAGE" (the server's
// message) that the result repeats, and text mode prints.
func TestErrorsAsClaudeCode(t *testing.T) {
	t.Parallel()
	fail := func(t *testing.T, n int, tail string) []string {
		var specs []string
		for i := range n {
			specs = append(specs, sseAnswer(t, fmt.Sprintf("msg_fail%d", i), "Half an ans", tail))
		}
		return specs
	}
	repeat := func(spec string, n int) func(*testing.T) []string {
		return func(*testing.T) []string { return slices.Repeat([]string{spec}, n) }
	}
	tests := []struct {
		class    string
		specs    func(*testing.T) []string
		maxTurns int
		budget   float64
		message  string // the server's message the user must see
	}{
		{class: "retries_exhausted_529", specs: repeat("status:529", 10), message: "Overloaded"},
		{class: "retries_exhausted_500", specs: repeat("status:500", 10), message: "Internal server error"},
		{class: "invalid_request_400", specs: repeat("status:400", 10), message: "Bad request"},
		{class: "authentication_401", specs: repeat("status:401", 10), message: "invalid x-api-key"},
		{class: "model_not_found_404", specs: repeat("status:404", 10), message: "model: no such model"},
		{class: "stream_failed", specs: func(t *testing.T) []string {
			return append(fail(t, 3, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n"),
				slices.Repeat([]string{"status:500"}, 5)...)
		}, message: "Internal server error"},
		{class: "max_turns", specs: func(*testing.T) []string { return []string{"bash:echo hi", "bash:echo again", "say:done"} }, maxTurns: 1},
		{class: "max_budget", specs: func(*testing.T) []string { return []string{"bash:echo hi", "bash:echo again", "say:done"} }, budget: 1e-9},
	}
	for _, tt := range tests {
		cc := readRecording(t, tt.class)
		for _, format := range []string{FormatText, FormatJSON, FormatStreamJSON} {
			t.Run(tt.class+"/"+format, func(t *testing.T) {
				t.Parallel()
				sess := newErrorSession(t, tt.maxTurns, answers(t, tt.specs(t)...))
				var stdout, stderr bytes.Buffer
				code := Run(t.Context(), sess, "say hi", Config{OutputFormat: format, MaxRetries: 2, MaxBudgetUSD: tt.budget, Catalogue: provider.Catalogue, Stdout: &stdout, Stderr: &stderr})
				want := map[string]ccLines{FormatJSON: cc.JSON, FormatStreamJSON: cc.StreamJSON}[format]
				if format == FormatText {
					want.ExitCode = cc.Text.ExitCode
				}
				if code != want.ExitCode {
					t.Fatalf("exit code %d, Claude Code's %d; stderr %s", code, want.ExitCode, stderr.String())
				}
				if format == FormatText {
					// One line, the failure, as Claude Code prints it: the
					// API's (with the server's message), or the limit's.
					out := stdout.String()
					prefix := "API Error: "
					if strings.HasPrefix(cc.Text.Stdout, "Error: ") {
						prefix = "Error: "
					}
					if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, prefix) || !strings.Contains(out, tt.message) {
						t.Errorf("stdout %q; Claude Code printed %q", out, cc.Text.Stdout)
					}
					return
				}
				got := lines(t, stdout.String())
				compareResult(t, got[len(got)-1], want.Lines[len(want.Lines)-1], tt.message)
				if format == FormatStreamJSON {
					compareAPIErrorLine(t, got, want.Lines)
				}
			})
		}
	}
}

// newErrorSession is a session against a fake model that answers with
// answers, retrying twice and running tools (the Agent tool too) without
// asking.
func newErrorSession(t *testing.T, maxTurns int, answers []fakemodel.Reply) *agent.Session {
	t.Helper()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	sess, err := agent.New(agent.Options{
		Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
		Model:    "claude-sonnet-4-5", WorkDir: t.TempDir(), MaxTurns: maxTurns,
		PermissionMode: protocol.ModeBypassPermissions, Subagents: []agent.Subagent{},
		Stream: model.StreamOptions{MaxRetries: 2, BaseDelay: 1, MaxDelay: 1},
		// The providers' prices, as every face's sessions have them.
		Catalogue: provider.Catalogue,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func compareResult(t *testing.T, got, want map[string]any, message string) {
	t.Helper()
	if got["type"] != "result" {
		t.Fatalf("last line %v is not a result", got)
	}
	for _, k := range resultFields {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
			t.Errorf("result %s = %v, Claude Code's %v", k, got[k], want[k])
		}
	}
	for _, k := range []string{"result", "errors"} {
		if _, has := got[k]; has != (want[k] != nil) {
			t.Errorf("result has %s: %v, Claude Code's: %v", k, has, want[k] != nil)
		}
	}
	if r, ok := want["result"].(string); ok && want["api_error_status"] != nil {
		status := fmt.Sprint(want["api_error_status"])
		if s, _ := got["result"].(string); !strings.HasPrefix(s, "API Error: "+status+" ") || !strings.Contains(s, message) {
			t.Errorf("result %q, want API Error: %s and the server's %q (Claude Code's %q)", s, status, message, r)
		}
	}
}

// compareAPIErrorLine finds Claude Code's assistant line of an API
// failure, if it wrote one, and sluice's, just before the result.
func compareAPIErrorLine(t *testing.T, got, want []map[string]any) {
	t.Helper()
	find := func(ls []map[string]any) map[string]any {
		for _, l := range ls {
			if l["type"] == "assistant" && l["is_api_error_message"] == true {
				return l
			}
		}
		return nil
	}
	w, g := find(want), find(got)
	if (w == nil) != (g == nil) {
		t.Fatalf("assistant line of the API error: sluice's %v, Claude Code's %v", g, w)
	}
	if w == nil {
		return
	}
	if g2 := got[len(got)-2]; fmt.Sprint(g2) != fmt.Sprint(g) {
		t.Errorf("the API error's assistant line is not just before the result")
	}
	for _, k := range apiErrorFields {
		if fmt.Sprint(g[k]) != fmt.Sprint(w[k]) {
			t.Errorf("assistant %s = %v, Claude Code's %v", k, g[k], w[k])
		}
	}
	gm, wm := g["message"].(map[string]any), w["message"].(map[string]any)
	for _, k := range []string{"model", "role", "type", "stop_reason", "stop_sequence"} {
		if fmt.Sprint(gm[k]) != fmt.Sprint(wm[k]) {
			t.Errorf("assistant message %s = %v, Claude Code's %v", k, gm[k], wm[k])
		}
	}
	content, _ := gm["content"].([]any)
	res := got[len(got)-1]["result"]
	if len(content) != 1 || fmt.Sprint(content[0]) != fmt.Sprint(map[string]any{"type": "text", "text": res}) {
		t.Errorf("assistant content %v, want one text block with the result %q", content, res)
	}
}

// A stream retried after it broke mid-answer shows the whole answer once
// in the stream events (Claude Code's show the beginning twice); a retried
// answer that departs from what was shown goes on from there.
func TestRetriedStreamShownOnce(t *testing.T) {
	t.Parallel()
	overloaded := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	tests := []struct{ name, shown, retried, want string }{
		{"repeats", "The whole ans", "The whole answer, once.", "The whole answer, once."},
		{"departs", "The whole ans", "Another answer.", "The whole ansAnother answer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sess := newErrorSession(t, 0, answers(t, sseAnswer(t, "msg_broken", tt.shown, overloaded), "say:"+tt.retried))
			var stdout, stderr bytes.Buffer
			if code := Run(t.Context(), sess, "hi", Config{OutputFormat: FormatStreamJSON, IncludePartial: true, MaxRetries: 2, Stdout: &stdout, Stderr: &stderr}); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var text strings.Builder
			starts := map[string]int{}
			for _, l := range lines(t, stdout.String()) {
				ev, ok := l["event"].(map[string]any)
				if !ok {
					continue
				}
				starts[ev["type"].(string)]++
				if d, ok := ev["delta"].(map[string]any); ok && d["type"] == "text_delta" {
					text.WriteString(d["text"].(string))
				}
			}
			if text.String() != tt.want {
				t.Errorf("the stream events showed %q, want %q", text.String(), tt.want)
			}
			if tt.name == "repeats" && (starts["message_start"] != 1 || starts["content_block_start"] != 1) {
				t.Errorf("starts %v, want one message and one block", starts)
			}
		})
	}
}
