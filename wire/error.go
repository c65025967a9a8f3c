package wire

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes. The -320xx codes are sluice's own.
const (
	CodeParseError     = -32700 // not JSON
	CodeInvalidRequest = -32600 // not a request object (also: a message over the size limit)
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeRequestFailed: the request was valid but the operation failed
	// (the agent's error is the message).
	CodeRequestFailed = -32000
	// CodeSessionNotFound: no session with that id is attached to this
	// connection (or stored, for initialize and restoreSession).
	CodeSessionNotFound = -32001
	// CodeSessionClosed: the session was closed (the server is shutting
	// down).
	CodeSessionClosed = -32002
)

// Error is a JSON-RPC error object. It is also a Go error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
