package printmode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
)

// The model's StructuredOutput call ends the run as in Claude Code
// (testdata/claude-code/structured_output.json): no further request, the
// input as structured_output and, as JSON text, as the result.
func TestStructuredOutputEndsTheRun(t *testing.T) {
	t.Parallel()
	var cc struct {
		StreamJSON ccLines `json:"stream_json"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", "structured_output.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	want := cc.StreamJSON.Lines[len(cc.StreamJSON.Lines)-1]
	call := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_so\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"test-model\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_so\",\"name\":\"StructuredOutput\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Paris\\\", \\\"population\\\": 2102650}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	path := filepath.Join(t.TempDir(), "call.sse")
	if err := os.WriteFile(path, []byte(call), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, path, "say:Not asked again."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	open := func(init Init) (*agent.Session, error) {
		s, err := agent.New(agent.Options{
			Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
			Model:    "test-model", WorkDir: t.TempDir(), ExtraTools: init.Tools,
		})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	var stdout, stderr bytes.Buffer
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"number"}},"required":["city","population"]}`)
	if code := Run(t.Context(), nil, "the biggest city of France", Config{OutputFormat: FormatStreamJSON, Open: open, JSONSchema: schema, Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ls := lines(t, stdout.String())
	got := ls[len(ls)-1]
	for _, k := range []string{"type", "subtype", "is_error", "result", "stop_reason", "terminal_reason"} {
		if got[k] != want[k] {
			t.Errorf("result %s = %v, Claude Code's %v", k, got[k], want[k])
		}
	}
	if g, w := marshalled(got["structured_output"]), marshalled(want["structured_output"]); g != w {
		t.Errorf("structured_output %s, Claude Code's %s", g, w)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, Claude Code made 1", n)
	}
}

func marshalled(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
