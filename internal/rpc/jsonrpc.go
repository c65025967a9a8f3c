package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/wire"
)

// Request is a decoded JSON-RPC request or notification.
type Request struct {
	// ID is the request's id as it was sent (a JSON string, number or
	// null); nil for a notification, which gets no response.
	ID     json.RawMessage
	Method string
	// Params is the params member: nil, a JSON object or a JSON array.
	Params json.RawMessage
}

// IsNotification reports whether the request expects no response.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Response is a JSON-RPC response as it travels.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wire.Error     `json:"error,omitempty"`
}

// nullID is the id of a response to a message whose id could not be read.
var nullID = json.RawMessage("null")

// ParseRequest decodes one incoming message. On failure it returns the
// error to answer with and the id to answer to (null when the id could not
// be read); a nil *wire.Error with a nil Request means the message is a
// response, which the server does not expect and ignores.
//
// The rules are JSON-RPC 2.0's: not JSON → -32700; a batch (array), a
// non-object, a missing or wrong "jsonrpc", an id that is not a string,
// number or null, a method that is not a string, or params that are not
// structured → -32600.
func ParseRequest(data []byte) (*Request, json.RawMessage, *wire.Error) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, nullID, &wire.Error{Code: wire.CodeParseError, Message: "parse error: the message is not valid JSON"}
	}
	switch data[0] {
	case '{':
	case '[':
		return nil, nullID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: batch requests are not supported; send one request per message"}
	default:
		return nil, nullID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: a request must be a JSON object"}
	}
	// Members are matched case-sensitively, as the specification says
	// (encoding/json's struct decoding would not).
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, nullID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
	id := env["id"]
	if id != nil {
		switch id[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return nil, nullID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: id must be a string, a number or null"}
		}
	}
	answerID := id
	if answerID == nil {
		answerID = nullID
	}
	rawMethod, hasMethod := env["method"]
	_, hasResult := env["result"]
	_, hasError := env["error"]
	if !hasMethod && (hasResult || hasError) {
		return nil, nil, nil // a response: the server sends no requests
	}
	var version string
	if json.Unmarshal(env["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, answerID, &wire.Error{Code: wire.CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}
	}
	var method string
	if !hasMethod || rawMethod[0] != '"' || json.Unmarshal(rawMethod, &method) != nil {
		return nil, answerID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: method must be a string"}
	}
	params := env["params"]
	if params != nil {
		switch params[0] {
		case '{', '[':
		default:
			return nil, answerID, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: params must be an object or an array"}
		}
	}
	return &Request{ID: id, Method: method, Params: params}, answerID, nil
}

// decodeParams decodes a request's params (an object; absent means {})
// into v, answering -32602 when they do not fit.
func decodeParams(params json.RawMessage, v any) *wire.Error {
	if params == nil {
		return nil
	}
	if params[0] != '{' {
		return &wire.Error{Code: wire.CodeInvalidParams, Message: "invalid params: params must be an object with named members"}
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &wire.Error{Code: wire.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return nil
}

// encodeResponse marshals a response to id with result or rpcErr.
func encodeResponse(id json.RawMessage, result any, rpcErr *wire.Error) ([]byte, error) {
	resp := Response{JSONRPC: "2.0", ID: id, Error: rpcErr}
	if rpcErr == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("rpc: encode result: %w", err)
		}
		resp.Result = raw
	}
	return json.Marshal(resp)
}
