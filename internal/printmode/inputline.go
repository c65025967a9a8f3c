package printmode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeLine decodes one line of stream-json input, judging a bad line as
// Claude Code 2.1.328 does. A line that is not JSON, a user line without
// a user message and a control_request without a request end the input
// (err). Other bad lines — a JSON value that is not an object, a type
// that is not a string, a request_id that is neither a string nor a
// number, a user message whose content is neither text nor blocks — are
// skipped, and skip says what is wrong with them; the session goes on.
func decodeLine(line []byte) (in incoming, skip string, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return in, fmt.Sprintf("it is a JSON %s, not an object", typeErr.Value), nil
		}
		return in, "", fmt.Errorf("input line is not JSON: %w", err)
	}
	if fields == nil { // null
		return in, "it is JSON null, not an object", nil
	}
	if raw, ok := fields["type"]; !ok || json.Unmarshal(raw, &in.Type) != nil {
		return in, `its "type" is missing or not a string`, nil
	}
	if raw, ok := fields["request_id"]; ok {
		if !validRequestID(raw) {
			return in, `its "request_id" is neither a string nor a number`, nil
		}
		in.RequestID = compact(raw)
	}
	switch in.Type {
	case "control_request":
		if !isObject(fields["request"]) {
			return in, "", errors.New(`a control_request line has no "request" object`)
		}
		if in.RequestID == nil {
			return in, `a control_request line has no "request_id"`, nil
		}
		in.Request = fields["request"]
	case "control_response":
		if !isObject(fields["response"]) {
			return in, `a control_response line has no "response" object`, nil
		}
		if json.Unmarshal(fields["response"], &in.Response) != nil || !validRequestID(in.Response.RequestID) {
			return in, `a control_response line's "response" is malformed`, nil
		}
	case "user":
		var msg struct {
			Role string `json:"role"`
		}
		if !isObject(fields["message"]) || json.Unmarshal(fields["message"], &msg) != nil || msg.Role != "user" {
			return in, "", errors.New(`a user line has no "message" object with "role": "user"`)
		}
		if _, _, err := userContent(line); err != nil {
			return in, err.Error(), nil
		}
	}
	return in, "", nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// validRequestID reports whether raw is a request id: a string or a
// number (the host's own ids are answered as they came).
func validRequestID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	var s string
	var n json.Number
	return json.Unmarshal(raw, &s) == nil || (raw[0] != '"' && json.Unmarshal(raw, &n) == nil)
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// idString is a request id as text: a string's value, a number's digits.
func idString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
