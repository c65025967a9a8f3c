package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// The built binary, sluice -p --provider openai-responses, against the
// shared fake Responses API. The first answer fails the response as too
// long (response.failed, context_length_exceeded): sluice compacts (a
// summary request) and retries with the summary. That answer reasons and
// stops at max_output_tokens (response.incomplete): sluice continues, the
// next request carrying the cut answer with its encrypted reasoning item,
// and the result is the cut text and its continuation joined, once.
func TestBinaryOverflowAndContinuation(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	ev := func(v string) json.RawMessage { return json.RawMessage(v) }
	summary, err := fakemodel.ParseReplies([]string{"say:The user asks what the notes say."})
	if err != nil {
		t.Fatal(err)
	}
	end, err := fakemodel.ParseReplies([]string{"say: 42."})
	if err != nil {
		t.Fatal(err)
	}
	answers := []fakemodel.Reply{
		{Raw: []byte(stream(`{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}}`))},
		summary[0],
		{Events: []json.RawMessage{
			ev(`{"type":"message_start","message":{"id":"msg_cut","model":"gpt-5","usage":{"input_tokens":40}}}`),
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking"}}`),
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me answer."}}`),
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"gAAAAABcut-reasoning=="}}`),
			ev(`{"type":"content_block_stop","index":0}`),
			ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text"}}`),
			ev(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"The notes"}}`),
			ev(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" say"}}`),
			ev(`{"type":"content_block_stop","index":1}`),
			ev(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":64}}`),
			ev(`{"type":"message_stop"}`),
		}},
		end[0],
	}
	srv, err := fakemodel.NewScript(fakemodel.OpenAIResponses, answers)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	cmd := exec.Command(bin, "-p", "What do my notes say?", "--provider", "openai-responses", "--model", "gpt-5", "--output-format", "json")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "SLUICE_HOME="+t.TempDir(), "HOME="+t.TempDir(), "OPENAI_API_KEY=sk-test-key", "OPENAI_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=", "GEMINI_API_KEY=", "GOOGLE_API_KEY=", "OPENAI_WIRE_API=", "SLUICE_PROVIDER=", "SLUICE_MODEL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	var result struct {
		Subtype string `json:"subtype"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &result); err != nil || result.Subtype != "success" || result.Result != "The notes say 42." {
		t.Fatalf("result %s: %v\n%s", stdout.String(), err, stderr.String())
	}
	got, err := fakemodel.Summary(fakemodel.OpenAIResponses, srv.Requests())
	if err != nil {
		t.Fatal(err)
	}
	if got != wantRequests {
		t.Fatalf("requests:\n%s\nwant:\n%s", got, wantRequests)
	}
}

// wantRequests is what the fake received: the prompt; the summary request
// (the prompt, then the instruction to summarise); the retry, the summary
// in place of the conversation; the continuation, carrying the cut answer
// (its reasoning item with the encrypted content, its text) and the
// request to go on.
const wantRequests = `#1 model=gpt-5 store=false include=reasoning.encrypted_content
user: input_text "What do my notes say?"
#2 model=gpt-5 store=false include=reasoning.encrypted_content
user: input_text "What do my notes say?"
user: input_text "Summarize this conversation so that it can continue without the earlier messages. Keep: what the user asked for and still wants, decisions made, files read or changed (with paths), commands run and their outcomes, errors met and how they were handled, and the work still to do. Be concise but complete; write the summary only, and do not call any tool."
#3 model=gpt-5 store=false include=reasoning.encrypted_content
user: input_text "This session is being continued from an earlier conversation whose context was compacted. Summary of the earlier conversation:\n\nThe user asks what the notes say."
#4 model=gpt-5 store=false include=reasoning.encrypted_content
user: input_text "This session is being continued from an earlier conversation whose context was compacted. Summary of the earlier conversation:\n\nThe user asks what the notes say."
assistant: reasoning "Let me answer." encrypted_content="gAAAAABcut-reasoning=="
assistant: output_text "The notes say"
user: input_text "Your response was cut off because it exceeded the output token limit. Continue exactly where you left off, without repeating anything."
`

// The built binary compacts a gpt-5 conversation (the provider's default
// model) at 85 % of gpt-5's 400K window, not of the 200K default: after a
// Bash call whose request took 300K tokens the result goes back as it is;
// after one of 345K sluice first asks for a summary.
func TestBinaryAutoCompactAtGPT5Window(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	for _, tt := range []struct {
		input   int
		compact bool
	}{
		{300_000, false},
		{345_000, true},
	} {
		t.Run(fmt.Sprint(tt.input), func(t *testing.T) {
			t.Parallel()
			call := stream(fmt.Sprintf(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","model":"gpt-5","usage":{"input_tokens":%d,"output_tokens":20}}}`, tt.input),
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"Bash"}}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"command\":\"echo hi\"}"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"command\":\"echo hi\"}","call_id":"call_1","name":"Bash"}}`)
			specs := []string{"say:It printed hi."}
			if tt.compact {
				specs = []string{"say:The user had the shell say hi.", "say:It printed hi."}
			}
			rest, err := fakemodel.ParseReplies(specs)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := fakemodel.NewScript(fakemodel.OpenAIResponses, append([]fakemodel.Reply{{Raw: []byte(call)}}, rest...))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cmd := exec.Command(bin, "-p", "Say hi with the shell", "--provider", "openai-responses", "--permission-mode", "bypassPermissions", "--output-format", "json")
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "SLUICE_HOME="+t.TempDir(), "HOME="+t.TempDir(), "OPENAI_API_KEY=sk-test-key", "OPENAI_BASE_URL="+srv.URL,
				"ANTHROPIC_API_KEY=", "GEMINI_API_KEY=", "GOOGLE_API_KEY=", "OPENAI_WIRE_API=", "SLUICE_PROVIDER=", "SLUICE_MODEL=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("sluice: %v\n%s\n%s", err, stderr.String(), stdout.String())
			}
			if !strings.Contains(stdout.String(), `"result":"It printed hi."`) {
				t.Fatalf("result %s\n%s", stdout.String(), stderr.String())
			}
			reqs := srv.Requests()
			summarised := len(reqs) == 3 && strings.Contains(string(reqs[1].Body), "Summarize this conversation")
			if len(reqs) != len(specs)+1 || summarised != tt.compact {
				got, _ := fakemodel.Summary(fakemodel.OpenAIResponses, reqs)
				t.Fatalf("%d input tokens: compacted %v, want %v; requests:\n%s", tt.input, summarised, tt.compact, got)
			}
		})
	}
}
