package agent

import (
	"context"
	"encoding/json"

	"github.com/sluicehq/sluice/protocol"
)

// Hooks let the program that embeds a session take part in its tool calls:
// decide a call before the permission mode does, answer the calls the mode
// asks about with more than yes or no, and hear how each call ended. A nil
// hook is not called. Hooks run on the goroutine of the call (calls of
// read-only tools may run side by side), with the run's context; a hook
// must return once that context is done.
type Hooks struct {
	// PreToolUse is asked about each call before the permission mode. A
	// Verdict without Decision leaves the call to the mode; "ask" makes
	// the mode ask even where it would allow.
	PreToolUse func(ctx context.Context, call ToolCall) Verdict
	// Ask answers the calls that need approval, in place of
	// Options.Approve; the request is published as with Approve, so faces
	// show it while Ask decides.
	Ask func(ctx context.Context, req protocol.PermissionRequest) Verdict
	// PostToolUse is told each call that ran, with what the model gets.
	PostToolUse func(ctx context.Context, call ToolCall, result string, isError bool)
}

// ToolCall is a tool call as hooks see it.
type ToolCall struct {
	ID, Name string
	Input    json.RawMessage
}

// VerdictAsk is a PreToolUse decision: ask even where the mode allows.
const VerdictAsk protocol.Decision = "ask"

// Verdict is a hook's decision on a call.
type Verdict struct {
	// Decision is protocol.DecisionAllow, protocol.DecisionDeny,
	// VerdictAsk, or "" for no opinion.
	Decision protocol.Decision
	// Reason, on a denial, is what the model is told as the call's result
	// (a default sentence when empty).
	Reason string
	// Input, on an allow, replaces the call's input when set.
	Input json.RawMessage
}

func (h *Hooks) preToolUse(ctx context.Context, c toolCall) Verdict {
	if h.PreToolUse == nil {
		return Verdict{}
	}
	return h.PreToolUse(ctx, ToolCall{ID: c.id, Name: c.name, Input: c.input})
}

func (h *Hooks) postToolUse(ctx context.Context, c toolCall, result string, isError bool) {
	if h.PostToolUse != nil {
		h.PostToolUse(ctx, ToolCall{ID: c.id, Name: c.name, Input: c.input}, result, isError)
	}
}
