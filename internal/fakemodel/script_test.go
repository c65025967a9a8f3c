package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestParseAnswers(t *testing.T) {
	t.Parallel()
	as, err := ParseReplies([]string{"say:héllo wörld, a text of more than sixteen bytes", "bash:ls > out.txt", "status:529", "../streamjson/testdata/tool_use_bash.ndjson"})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 5 {
		t.Fatalf("%d answers, want 5 (the recording holds two)", len(as))
	}
	var text strings.Builder
	for _, ev := range as[0].Events {
		var e struct{ Delta struct{ Text string } }
		json.Unmarshal(ev, &e)
		text.WriteString(e.Delta.Text)
	}
	if text.String() != "héllo wörld, a text of more than sixteen bytes" {
		t.Errorf("say: deltas make %q", text.String())
	}
	var input strings.Builder
	for _, ev := range as[1].Events {
		var e struct {
			Delta struct {
				PartialJSON string `json:"partial_json"`
			}
		}
		json.Unmarshal(ev, &e)
		input.WriteString(e.Delta.PartialJSON)
	}
	if input.String() != `{"command":"ls > out.txt"}` {
		t.Errorf("bash: input %s", input.String())
	}
	if as[2].Status != 529 {
		t.Errorf("status: %+v", as[2])
	}
	for _, bad := range []string{"status:200", "status:x", "shout:hi", "missing.ndjson", "missing.sse"} {
		if _, err := ParseReplies([]string{bad}); err == nil {
			t.Errorf("ParseReplies(%q) did not fail", bad)
		}
	}
}

// A Script keeps what each request carried: its URL, header and body.
func TestScriptRecordsRequests(t *testing.T) {
	t.Parallel()
	as, err := ParseReplies([]string{"say:hi"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScript(OpenAI, as)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := s.Requests()
	if len(got) != 1 || got[0].URL.Path != "/v1/chat/completions" || got[0].Header.Get("Authorization") != "Bearer k" || string(got[0].Body) != `{"model":"m"}` {
		t.Fatalf("%+v", got)
	}
}
