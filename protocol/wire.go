package protocol

import (
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
	return json.Marshal(Notification{JSONRPC: "2.0", Method: ev.Method(), Params: params})
}

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
