package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Notification is an event as it travels on the wire: a JSON-RPC 2.0
// notification whose params are the event.
type Notification struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// ErrUnknownMethod is returned by Decode for a method that is not an event.
var ErrUnknownMethod = errors.New("protocol: unknown event method")

// Encode returns ev as a JSON-RPC notification, one line without the
// trailing newline.
func Encode(ev Event) ([]byte, error) {
	params, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("protocol: encode %s: %w", ev.Method(), err)
	}
	// The envelope is framed by hand: marshalling a Notification would
	// scan and copy params, valid and compact already, once more, for every
	// event on its way to every client and to a cluster's log. Methods are
	// plain ASCII names, never escaped: the bytes are json.Marshal's.
	method := ev.Method()
	b := make([]byte, 0, len(notePrefix)+len(method)+len(paramsSep)+len(params)+1)
	b = append(b, notePrefix...)
	b = append(b, method...)
	b = append(b, paramsSep...)
	b = append(b, params...)
	return append(b, '}'), nil
}

// notePrefix and paramsSep frame a notification as Encode writes it:
// {"jsonrpc":"2.0","method":"NAME","params":PARAMS}.
const (
	notePrefix = `{"jsonrpc":"2.0","method":"`
	paramsSep  = `","params":`
)

// Decode parses the params of a notification named method into its event.
func Decode(method string, params json.RawMessage) (Event, error) {
	var ev Event
	var err error
	switch method {
	case MethodUserMessageAdded:
		ev, err = decodeAs[UserMessageAdded](params)
	case MethodAssistantMessageAdded:
		ev, err = decodeAs[AssistantMessageAdded](params)
	case MethodAssistantContentUpdated:
		ev, err = decodeAs[AssistantContentUpdated](params)
	case MethodAssistantReasoningUpdated:
		ev, err = decodeAs[AssistantReasoningUpdated](params)
	case MethodToolBlockUpdated:
		ev, err = decodeAs[ToolBlockUpdated](params)
	case MethodErrorBlockAdded:
		ev, err = decodeAs[ErrorBlockAdded](params)
	case MethodCompactBlockAdded:
		ev, err = decodeAs[CompactBlockAdded](params)
	case MethodAssistantMessageDiscarded:
		ev, err = decodeAs[AssistantMessageDiscarded](params)
	case MethodTurnEnded:
		ev, err = decodeAs[TurnEnded](params)
	case MethodMessagesRewound:
		ev, err = decodeAs[MessagesRewound](params)
	case MethodMessagesCleared:
		ev, err = decodeAs[MessagesCleared](params)
	case MethodRunStateChanged:
		ev, err = decodeAs[RunStateChanged](params)
	case MethodStreamNotice:
		ev, err = decodeAs[StreamNotice](params)
	case MethodPermissionRequest:
		ev, err = decodeAs[PermissionRequest](params)
	case MethodPermissionResolved:
		ev, err = decodeAs[PermissionResolved](params)
	case MethodQueueChanged:
		ev, err = decodeAs[QueueChanged](params)
	case MethodTaskUpdated:
		ev, err = decodeAs[TaskUpdated](params)
	case MethodCompactionUpdated:
		ev, err = decodeAs[CompactionUpdated](params)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownMethod, method)
	}
	if err != nil {
		return nil, fmt.Errorf("protocol: decode %s: %w", method, err)
	}
	return ev, nil
}

// DecodeNotification parses a whole JSON-RPC notification.
func DecodeNotification(data []byte) (Event, error) {
	if ev, ok := decodeFramed(data); ok {
		return ev, nil
	}
	var n Notification
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("protocol: decode notification: %w", err)
	}
	return Decode(n.Method, n.Params)
}

func decodeAs[T Event](params json.RawMessage) (Event, error) {
	var v T
	if err := json.Unmarshal(params, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeFramed decodes a notification in Encode's shape by its frame,
// without parsing the envelope as JSON first (which scans and copies the
// params before they are parsed). Anything else — another shape, a method
// that is not an event, params that do not parse alone — reports false, and
// DecodeNotification's general path decides.
func decodeFramed(data []byte) (Event, bool) {
	if len(data) < len(notePrefix) || string(data[:len(notePrefix)]) != notePrefix {
		return nil, false
	}
	rest := data[len(notePrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, false
	}
	method := rest[:end]
	rest = rest[end:]
	if len(rest) < len(paramsSep)+1 || string(rest[:len(paramsSep)]) != paramsSep || rest[len(rest)-1] != '}' {
		return nil, false
	}
	ev, err := Decode(string(method), rest[len(paramsSep):len(rest)-1])
	return ev, err == nil
}
