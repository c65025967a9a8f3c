package rpc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       string
		code     int    // 0: a request
		answerID string // the id an error is answered to
		method   string
		id       string // the request's id; "" for a notification
		params   string
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`, method: "m", id: "1", params: `{"a":1}`},
		{in: `  {"jsonrpc":"2.0","id":"x","method":"m"}  `, method: "m", id: `"x"`},
		{in: `{"jsonrpc":"2.0","id":null,"method":"m"}`, method: "m", id: "null"},
		{in: `{"jsonrpc":"2.0","id":-1.5e3,"method":"m","params":[1]}`, method: "m", id: "-1.5e3", params: "[1]"},
		{in: `{"jsonrpc":"2.0","method":"note"}`, method: "note"},
		{in: `{"jsonrpc":"2.0","id":1,"method":"m","extra":true}`, method: "m", id: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":`, code: wire.CodeParseError, answerID: "null"},
		{in: ``, code: wire.CodeParseError, answerID: "null"},
		{in: `{"a":1}{"b":2}`, code: wire.CodeParseError, answerID: "null"},
		{in: `[]`, code: wire.CodeInvalidRequest, answerID: "null"},
		{in: `"m"`, code: wire.CodeInvalidRequest, answerID: "null"},
		{in: `null`, code: wire.CodeInvalidRequest, answerID: "null"},
		{in: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: wire.CodeInvalidRequest, answerID: "null"},
		{in: `{"jsonrpc":"2.0","id":[1],"method":"m"}`, code: wire.CodeInvalidRequest, answerID: "null"},
		{in: `{"id":1,"method":"m"}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":null,"id":1,"method":"m"}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":["2.0"],"id":1,"method":"m"}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":null}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":{}}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, code: wire.CodeInvalidRequest, answerID: "1"},
		{in: `{"jsonrpc":"2.0","method":"m","params":1}`, code: wire.CodeInvalidRequest, answerID: "null"},
	}
	for _, c := range cases {
		req, id, rerr := ParseRequest([]byte(c.in))
		if c.code != 0 {
			if rerr == nil || rerr.Code != c.code || string(id) != c.answerID {
				t.Errorf("%s: got %+v id %s, want code %d id %s", c.in, rerr, id, c.code, c.answerID)
			}
			continue
		}
		if rerr != nil || req == nil {
			t.Errorf("%s: %+v", c.in, rerr)
			continue
		}
		if req.Method != c.method || string(req.ID) != c.id || string(req.Params) != c.params || req.IsNotification() != (c.id == "") {
			t.Errorf("%s: got %+v", c.in, req)
		}
	}
	// A response from the host is neither a request nor an error.
	if req, _, rerr := ParseRequest([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); req != nil || rerr != nil {
		t.Errorf("response: %+v %+v", req, rerr)
	}
}

func TestDecodeParams(t *testing.T) {
	t.Parallel()
	var p wire.SendMessageParams
	if err := decodeParams(nil, &p); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`[1]`, `{"text":1}`, `{"force":"yes"}`} {
		if err := decodeParams(json.RawMessage(in), &p); err == nil || err.Code != wire.CodeInvalidParams {
			t.Errorf("%s: %+v", in, err)
		}
	}
	if err := decodeParams(json.RawMessage(`{"text":"hi","force":true,"later":[1]}`), &p); err != nil || p.Text != "hi" || !p.Force {
		t.Errorf("%+v %+v", p, err)
	}
}

// FuzzParseRequest checks the decoder against encoding/json: whatever the
// input, it does not panic, answers invalid JSON with -32700 and anything
// else either as a request whose members are what a generic decoder reads,
// or with -32600 and an id that is valid JSON.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"abort"}`,
		`{"jsonrpc":"2.0","id":"a","result":null}`,
		`[{"jsonrpc":"2.0"}]`, `{"id":{}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":3}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, id, rerr := ParseRequest(data)
		if !json.Valid(bytes.TrimSpace(data)) {
			if rerr == nil || rerr.Code != wire.CodeParseError {
				t.Fatalf("invalid JSON %q: %+v", data, rerr)
			}
			return
		}
		if rerr != nil {
			if rerr.Code != wire.CodeInvalidRequest || !json.Valid(id) {
				t.Fatalf("%q: %+v id %q", data, rerr, id)
			}
			return
		}
		var generic map[string]any
		if err := json.Unmarshal(data, &generic); err != nil {
			t.Fatalf("accepted %q that is not an object: %v", data, err)
		}
		if req == nil {
			if _, ok := generic["method"]; ok {
				t.Fatalf("%q with a method taken for a response", data)
			}
			return
		}
		if generic["jsonrpc"] != "2.0" || generic["method"] != req.Method {
			t.Fatalf("%q: method %q", data, req.Method)
		}
		gid, hasID := generic["id"]
		if hasID != (req.ID != nil) {
			t.Fatalf("%q: id %q", data, req.ID)
		}
		switch gid.(type) {
		case nil, string, float64:
		default:
			t.Fatalf("%q: accepted id %q", data, req.ID)
		}
		switch generic["params"].(type) {
		case nil:
			if req.Params != nil && string(req.Params) != "null" {
				t.Fatalf("%q: params %q", data, req.Params)
			}
		case map[string]any, []any:
		default:
			t.Fatalf("%q: accepted params %q", data, req.Params)
		}
	})
}
