package printmode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// sseAnswer writes an Anthropic stream whose one text block is text, then
// ends with tail (a message_delta and message_stop, or an error event).
func sseAnswer(t *testing.T, id, text, tail string) string {
	t.Helper()
	body := fmt.Sprintf("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":%q,\"type\":\"message\",\"role\":\"assistant\",\"model\":\"test-model\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n", id) +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text) +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + tail
	path := filepath.Join(t.TempDir(), id+".sse")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const maxTokensTail = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// The result line follows one rule, Claude Code's: it is the answer —
// whole across an automatic max_tokens continuation — or, when the run
// failed on the API, the failure with the server's message ("API Error:
// ..."), with is_error true and no errors (what SDK front-ends show their
// user is result).
func TestResultRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		specs     func(t *testing.T) []string
		result    string
		isError   bool
		stop      any
		continued any
	}{
		{"max_tokens, then the continuation", func(t *testing.T) []string {
			return []string{sseAnswer(t, "msg_cut", "The first half of the answer, ", maxTokensTail), "say:and the second half."}
		}, "The first half of the answer, and the second half.", false, "end_turn", "max_tokens"},
		{"an error after text", func(t *testing.T) []string {
			return []string{sseAnswer(t, "msg_err", "Partial answer",
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"the model refused the rest\"}}\n\n")}
		}, "API Error: the model refused the rest", true, "stop_sequence", nil},
		{"an error before any text", func(t *testing.T) []string { return []string{"status:400"} }, "API Error: 400 Bad request", true, "stop_sequence", nil},
		{"an error after a continuation", func(t *testing.T) []string {
			return []string{sseAnswer(t, "msg_cut", "Cut here, ", maxTokensTail), "status:400"}
		}, "API Error: 400 Bad request", true, "stop_sequence", "max_tokens"},
	}
	for _, tt := range tests {
		for _, format := range []string{FormatJSON, FormatStreamJSON, FormatText} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				sess := newSession(t, answers(t, tt.specs(t)...)...)
				var stdout, stderr bytes.Buffer
				code := Run(t.Context(), sess, "Answer at length.", Config{OutputFormat: format, Stdout: &stdout, Stderr: &stderr})
				if (code != 0) != tt.isError {
					t.Fatalf("exit status %d; stderr %s", code, stderr.String())
				}
				if format == FormatText {
					want := tt.result
					if want != "" {
						want += "\n"
					}
					if stdout.String() != want {
						t.Fatalf("stdout %q, want %q", stdout.String(), want)
					}
					return
				}
				ls := lines(t, stdout.String())
				res := ls[len(ls)-1]
				if res["type"] != "result" || res["result"] != tt.result || res["is_error"] != tt.isError ||
					res["stop_reason"] != tt.stop || res["continued_after"] != tt.continued {
					t.Fatalf("result line %v", res)
				}
				errs, _ := res["errors"].([]any)
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
			})
		}
	}
}
