package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

func TestFilterLines(t *testing.T) {
	t.Parallel()
	long := `{"jsonrpc":"2.0","id":9,"method":"x","params":"` + strings.Repeat("a", 300) + `"}`
	tests := []struct {
		name      string
		in        string
		forwarded int
		errors    []string // the answers, as JSON
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n", 1, nil},
		{"notification", `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, 1, nil},
		{"response", `{"jsonrpc":"2.0","id":"a","result":{}}` + "\r\n", 1, nil},
		{"blank lines", "\n \n\t\n", 0, nil},
		{"not json", "hello\n", 0, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"the line is not JSON"}}`}},
		{"array", "[]\n", 0, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a message must be a JSON object"}}`}},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"m"}`, 0, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"jsonrpc must be \"2.0\""}}`}},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, 0, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"id must be a string, a number or null"}}`}},
		{"neither", `{"jsonrpc":"2.0"}`, 0, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a message needs a method or an id"}}`}},
		{"too long, then a good one", long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"m"}` + "\n", 1,
			[]string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"message longer than 256 bytes skipped"}}`}},
		{"pretty printed is compacted", "{\"jsonrpc\": \"2.0\", \"id\": 1,   \"method\": \"m\"}\n", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errs bytes.Buffer
			if err := filterLines(strings.NewReader(tt.in), &out, &errs, 256, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out.String(), "\n"); got != tt.forwarded {
				t.Errorf("forwarded %d lines, want %d: %q", got, tt.forwarded, out.String())
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(errs.String(), "\n"), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.errors, "\n") {
				t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errors, "\n"))
			}
		})
	}
}

// FuzzFilterLines checks that whatever arrives, the SDK is given only
// single-line JSON objects and the client only JSON-RPC error responses.
func FuzzFilterLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"not json\n[1]\n{}\n",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}` + "\r\n" + `{"jsonrpc":"2.0","method":""}`,
		strings.Repeat("x", 300) + "\n" + `{"jsonrpc":"2.0","id":"s","result":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"/btw why?"}]}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out, errs bytes.Buffer
		// The requests also go to the /btw watch, with a session to count in.
		srv := &Server{sessions: map[sdk.SessionId]*session{"s1": {}}}
		if err := filterLines(bytes.NewReader(data), &out, &errs, 128, nil, srv.sawRequest); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		fwd := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		if out.Len() == 0 {
			fwd = nil
		}
		for _, l := range fwd {
			if len(l) == 0 || l[0] != '{' || !json.Valid(l) {
				t.Fatalf("forwarded %q", l)
			}
		}
		answers := bytes.Split(bytes.TrimSuffix(errs.Bytes(), []byte("\n")), []byte("\n"))
		if errs.Len() == 0 {
			answers = nil
		}
		for _, l := range answers {
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(l, &m) != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code >= 0 {
				t.Fatalf("answered %q", l)
			}
		}
		if len(fwd)+len(answers) > lines {
			t.Fatalf("%d lines in, %d forwarded and %d answered", lines, len(fwd), len(answers))
		}
	})
}

func TestIsResponse(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`:                true,
		`{"jsonrpc":"2.0","id":"a,\"method\":1","error":{"code":-32601}}`:            true,
		`{"jsonrpc":"2.0","id":{"x":[1,{"result":2}]},"result":null}`:                true,
		`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{}}`: false,
		`{"jsonrpc":"2.0","method":"session/update","params":{"result":1}}`:          false,
		`not json`: false,
		`[]`:       false,
	} {
		if got := isResponse([]byte(msg)); got != want {
			t.Errorf("isResponse(%s) = %v", msg, got)
		}
	}
}

// FuzzIsResponse checks that any output line is classified without
// panicking, and that a response is JSON that has a result or an error.
func FuzzIsResponse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"x"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !isResponse(msg) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(msg, &m); err != nil {
			// Only a prefix is read: a line broken after its result key
			// still counts, as the SDK never writes one.
			return
		}
		if _, ok := m["result"]; !ok {
			if _, ok := m["error"]; !ok {
				t.Fatalf("%s classified as a response", msg)
			}
		}
	})
}
