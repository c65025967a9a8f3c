package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// The built binary, sluice -p --provider gemini, against a local Gemini
// API: the first answer thinks (a signed thought summary), says a word and
// calls Read (a signed function call with the server's id); the second
// request must carry the thought and the call back with their signatures
// on the same parts and Read's result as a functionResponse, and its
// answer ends the turn. The stream-json output shows the thinking, the
// text, the tool call and the result as for any provider.
func TestBinaryToolRoundTrip(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("the answer is 42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := stream("STOP",
		`[{"text":"I should read the notes.","thought":true,"thoughtSignature":"c2lnLXRob3VnaHQ="}]`,
		`[{"text":"Reading."}]`,
		`[{"functionCall":{"name":"Read","args":{"file_path":"notes.txt"},"id":"fc-7"},"thoughtSignature":"c2lnLWNhbGw="}]`)
	second := stream("STOP", `[{"text":"The notes say 42."}]`, `[{"text":"","thoughtSignature":"c2lnLWVuZA=="}]`)
	h, _ := fakemodel.Attempts(fakemodel.SSE(first), fakemodel.SSE(second))
	rec := fakemodel.Record(h)
	srv := httptest.NewServer(rec)
	defer srv.Close()

	cmd := exec.Command(bin, "-p", "What do my notes say?", "--provider", "gemini", "--model", "gemini-3-pro-preview",
		"--output-format", "stream-json", "--verbose", "--include-partial-messages")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "SLUICE_HOME="+t.TempDir(), "HOME="+t.TempDir(), "GEMINI_API_KEY="+apiKey, "GEMINI_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "SLUICE_PROVIDER=", "SLUICE_MODEL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var bodies [][]byte
	for _, r := range rec.Requests() {
		if r.URL.Path != "/v1beta/models/gemini-3-pro-preview:streamGenerateContent" || r.URL.RawQuery != "alt=sse" ||
			r.Header.Get("x-goog-api-key") != apiKey {
			t.Errorf("request %s?%s key %q", r.URL.Path, r.URL.RawQuery, r.Header.Get("x-goog-api-key"))
		}
		bodies = append(bodies, r.Body)
	}
	if err != nil {
		t.Fatalf("sluice: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), apiKey) {
		t.Fatal("the key is in the output")
	}

	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	var req struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(bodies[1], &req); err != nil {
		t.Fatal(err)
	}
	read := false
	for _, d := range req.Tools[0].FunctionDeclarations {
		if d.Name == "Read" && d.Parameters["type"] == "OBJECT" {
			read = true
		}
	}
	if !read || len(req.Contents) != 3 || req.Contents[1].Role != "model" || req.Contents[2].Role != "user" {
		t.Fatalf("second request: %s", bodies[1])
	}
	model := fmt.Sprintf("%s", req.Contents[1].Parts)
	for _, want := range []string{
		`{"text":"I should read the notes.","thought":true,"thoughtSignature":"c2lnLXRob3VnaHQ="}`,
		`{"text":"Reading."}`,
		`{"thoughtSignature":"c2lnLWNhbGw=","functionCall":{"id":"fc-7","name":"Read","args":{"file_path":"notes.txt"}}}`,
	} {
		if !strings.Contains(model, want) {
			t.Fatalf("model turn lacks %s:\n%s", want, model)
		}
	}
	var resp struct {
		FunctionResponse struct {
			ID       string            `json:"id"`
			Name     string            `json:"name"`
			Response map[string]string `json:"response"`
		} `json:"functionResponse"`
	}
	if err := json.Unmarshal(req.Contents[2].Parts[0], &resp); err != nil || resp.FunctionResponse.ID != "fc-7" ||
		resp.FunctionResponse.Name != "Read" || !strings.Contains(resp.FunctionResponse.Response["output"], "the answer is 42") {
		t.Fatalf("function response %s: %v", req.Contents[2].Parts[0], err)
	}

	out := stdout.String()
	for _, want := range []string{
		`"delta":{"type":"thinking_delta","thinking":"I should read the notes."}`,
		`"delta":{"type":"signature_delta","signature":"c2lnLXRob3VnaHQ="}`,
		`"delta":{"type":"text_delta","text":"Reading."}`,
		`"content_block":{"type":"tool_use","id":"fc-7","name":"Read","input":{}}`,
		`"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"notes.txt\"}"}`,
		`"delta":{"type":"text_delta","text":"The notes say 42."}`,
		`"type":"result","subtype":"success","is_error":false`,
		`"result":"The notes say 42."`,
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %s:\n%s", want, out)
		}
	}
	// Signatures of text and tool blocks stay in the session, out of the
	// Anthropic-shaped stream.
	if strings.Contains(out, "c2lnLWNhbGw=") || strings.Contains(out, "c2lnLWVuZA==") {
		t.Fatalf("a text or tool signature in the output:\n%s", out)
	}
}

// The built binary against a local Gemini API that first refuses the
// prompt as too long (Google's 400): sluice compacts (a summary request)
// and retries; that answer stops at MAX_TOKENS and is continued, and the
// result is the cut text and its continuation joined.
func TestBinaryOverflowAndContinuation(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	h, _ := fakemodel.Attempts(
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream") // as Google answers a streaming request
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`)
		},
		fakemodel.SSE(stream("STOP", `[{"text":"The user asks what the notes say."}]`)),
		fakemodel.SSE(stream("MAX_TOKENS", `[{"text":"Let me answer.","thought":true}]`, `[{"text":"The notes"}]`, `[{"text":" say","thoughtSignature":"Y3V0"}]`)),
		fakemodel.SSE(stream("STOP", `[{"text":" 42."}]`)),
	)
	rec := fakemodel.Record(h)
	srv := httptest.NewServer(rec)
	defer srv.Close()

	cmd := exec.Command(bin, "-p", "What do my notes say?", "--provider", "gemini", "--output-format", "json")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "SLUICE_HOME="+t.TempDir(), "HOME="+t.TempDir(), "GEMINI_API_KEY="+apiKey, "GEMINI_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "SLUICE_PROVIDER=", "SLUICE_MODEL=")
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
		t.Fatalf("result %s: %v", stdout.String(), err)
	}
	var bodies []string
	for _, r := range rec.Requests() {
		bodies = append(bodies, string(r.Body))
	}
	if len(bodies) != 4 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, want := range []string{
		"Summarize this conversation",                                                   // the compaction's summary request
		"The user asks what the notes say.",                                             // the retry carries the summary
		`{"role":"model","parts":[{"text":"The notes say","thoughtSignature":"Y3V0"}]}`, // the cut answer goes back, signed
	} {
		if !strings.Contains(bodies[i+1], want) {
			t.Fatalf("request %d lacks %s:\n%s", i+2, want, bodies[i+1])
		}
	}
	if !strings.Contains(bodies[3], "exceeded the output token limit") {
		t.Fatalf("no continuation prompt:\n%s", bodies[3])
	}
}
