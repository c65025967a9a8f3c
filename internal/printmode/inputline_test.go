package printmode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// What each bad input line does, as Claude Code 2.1.328 does it: "end"
// ends the input (Claude Code exits 1), "skip" ignores the line with a
// note and the session goes on, "ok" takes it.
func TestDecodeLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, want, why string
	}{
		{`this is not JSON`, "end", "not JSON"},
		{`{"type":"user"`, "end", "not JSON"},
		{`[1,2]`, "skip", "JSON array, not an object"},
		{`42`, "skip", "JSON number, not an object"},
		{`"user"`, "skip", "JSON string, not an object"},
		{`null`, "skip", "JSON null"},
		{`{"type":5}`, "skip", `"type" is missing or not a string`},
		{`{}`, "skip", `"type" is missing`},
		{`{"type":"bogus"}`, "ok", ""}, // dispatch notes the unknown type
		{`{"type":"control_request","request_id":5,"request":{"subtype":"interrupt"}}`, "ok", ""},
		{`{"type":"control_request","request_id":{"a":1},"request":{"subtype":"interrupt"}}`, "skip", `"request_id" is neither a string nor a number`},
		{`{"type":"control_request","request_id":"x"}`, "end", `no "request" object`},
		{`{"type":"control_request","request_id":"x","request":[]}`, "end", `no "request" object`},
		{`{"type":"control_request","request":{"subtype":"interrupt"}}`, "skip", `no "request_id"`},
		{`{"type":"control_response"}`, "skip", `no "response" object`},
		{`{"type":"control_response","response":{"subtype":"success","request_id":[1]}}`, "skip", `"response" is malformed`},
		{`{"type":"user"}`, "end", `no "message" object`},
		{`{"type":"user","message":{"role":"assistant","content":"hi"}}`, "end", `"role": "user"`},
		{`{"type":"user","message":{"role":"user","content":5}}`, "skip", "neither a string nor blocks"},
		{`{"type":"user","message":{"role":"user","content":"hi"}}`, "ok", ""},
	} {
		in, skip, err := decodeLine([]byte(tc.line))
		got, msg := "ok", ""
		switch {
		case err != nil:
			got, msg = "end", err.Error()
		case skip != "":
			got, msg = "skip", skip
		}
		if got != tc.want || !strings.Contains(msg, tc.why) {
			t.Errorf("%s: %s %q, want %s %q", tc.line, got, msg, tc.want, tc.why)
		}
		if tc.line == `{"type":"control_request","request_id":5,"request":{"subtype":"interrupt"}}` && string(in.RequestID) != "5" {
			t.Errorf("numeric request_id kept as %q, want 5", in.RequestID)
		}
	}
}

// A host's bad lines are noted and skipped, and the session goes on; a
// numeric request_id is answered as a number, as Claude Code answers it.
func TestBadInputLinesAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	code, f, srv, stderr := runHost(t, Config{}, nil, []string{"say:Hi."}, func(f *fakeHost) {
		for _, l := range []string{`[1,2]`, `42`, `{"type":"bogus"}`, `{"type":"user","message":{"role":"user","content":5}}`,
			`{"type":"control_request","request_id":7,"request":{"subtype":"mcp_status"}}`,
			`{"type":"user","message":{"role":"user","content":"hello"}}`} {
			f.send(l)
		}
	})
	if code != 0 {
		t.Errorf("exit %d after a success result: %s", code, stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
	if k := fmt.Sprint(kinds(f.lines)); !strings.Contains(k, "result/success") {
		t.Errorf("lines %s, want a success result", k)
	}
	var answered bool
	for _, l := range f.lines {
		if l["type"] == "control_response" {
			r := l["response"].(map[string]any)
			answered = answered || (r["request_id"] == float64(7) && r["subtype"] == "success")
		}
	}
	if !answered {
		t.Errorf("the numeric request_id 7 was not answered as 7")
	}
	for _, want := range []string{"JSON array, not an object", "JSON number", `unknown`, "neither a string nor blocks"} {
		if !strings.Contains(stderr, want) && !(want == "unknown" && strings.Contains(stderr, `type "bogus"`)) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
}

// A line that ends the input after a success: the exit code is 1 and the
// last result says why, so the two agree (Claude Code exits 1 there too,
// its last result a success).
func TestInputErrorAfterASuccess(t *testing.T) {
	t.Parallel()
	code, f, _, stderr := runHost(t, Config{}, nil, []string{"say:Hi."}, func(f *fakeHost) {
		f.send(`{"type":"user","message":{"role":"user","content":"hello"}}`)
	}, func(f *fakeHost) {
		f.send(`{"type":"user"}`)
	})
	if code != 1 {
		t.Errorf("exit %d, want 1: %s", code, stderr)
	}
	var results []map[string]any
	for _, l := range f.lines {
		if l["type"] == "result" {
			results = append(results, l)
		}
	}
	if len(results) != 2 || results[0]["is_error"] != false || results[1]["is_error"] != true ||
		!strings.Contains(fmt.Sprint(results[1]["errors"]), `no "message" object`) {
		t.Errorf("results %v, want a success then an error naming the bad line", results)
	}
}

// FuzzDecodeLine checks that any line is taken, skipped with a reason or
// ends the input, and that a line taken has a type and a usable id.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","message":{"role":"user","content":"hi"}}`,
		`{"type":"control_request","request_id":5,"request":{"subtype":"interrupt"}}`,
		`{"type":"control_response","response":{"subtype":"success","request_id":"sluice-1","response":{}}}`,
		`[1]`, `null`, `{"type":"user"}`, `not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in, skip, err := decodeLine(line)
		if err != nil || skip != "" {
			return
		}
		if in.Type == "" && !bytes.Contains(line, []byte(`"type"`)) {
			t.Fatalf("taken without a type: %q", line)
		}
		if in.RequestID != nil && !validRequestID(in.RequestID) {
			t.Fatalf("taken with request_id %q", in.RequestID)
		}
		if in.Type == "control_request" && (in.RequestID == nil || !isObject(in.Request)) {
			t.Fatalf("control_request taken without an id or a request: %q", line)
		}
	})
}
