package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/protocol"
)

// Permission option ids, one per ACP option kind.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

var permissionOptions = []sdk.PermissionOption{
	{OptionId: optAllowOnce, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: optAllowAlways, Name: "Always allow", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	{OptionId: optRejectAlways, Name: "Always reject", Kind: sdk.PermissionOptionKindRejectAlways},
}

// ask puts a permission request to the client, without holding up the
// pump: the tool waits for the answer, the session's other updates do not.
// A tool the user rejected always is refused without asking (the agent
// remembers allow-always itself).
func (ss *session) ask(req protocol.PermissionRequest) {
	ss.mu.Lock()
	rejected := ss.rejected[req.Name]
	var ctx context.Context
	var cancel context.CancelFunc
	if !rejected {
		ctx, cancel = context.WithCancel(ss.ctx)
		ss.asking[req.RequestID] = cancel
	}
	ss.mu.Unlock()
	if rejected {
		ss.answer(req.RequestID, protocol.DecisionDeny)
		return
	}
	v := viewOf(ss.tr.workDir, req.Name, req.Parameters, req.CompactParams, req.OldText)
	call := sdk.ToolCallUpdate{
		ToolCallId: sdk.ToolCallId(req.ToolID),
		Title:      sdk.Ptr(v.title),
		Kind:       sdk.Ptr(toolKind(req.Name)),
		Status:     sdk.Ptr(sdk.ToolCallStatusPending),
		RawInput:   v.rawInput,
		Locations:  v.locations,
	}
	switch {
	case v.diff != nil:
		call.Content = []sdk.ToolCallContent{*v.diff}
	case v.command != "":
		call.Content = []sdk.ToolCallContent{textContent(v.command)}
	}
	go func() {
		defer cancel()
		resp, err := ss.srv.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
			SessionId: ss.id, ToolCall: call, Options: permissionOptions,
		})
		ss.mu.Lock()
		delete(ss.asking, req.RequestID)
		ss.mu.Unlock()
		decision := protocol.DecisionDeny
		if err != nil {
			ss.srv.log.Debug("permission request failed", "session", ss.id, "err", err)
		} else if sel := resp.Outcome.Selected; sel != nil {
			switch sel.OptionId {
			case optAllowOnce:
				decision = protocol.DecisionAllow
			case optAllowAlways:
				decision = protocol.DecisionAllowAlways
			case optRejectAlways:
				ss.mu.Lock()
				ss.rejected[req.Name] = true
				ss.mu.Unlock()
			}
		}
		ss.answer(req.RequestID, decision)
	}()
}

func (ss *session) answer(requestID string, decision protocol.Decision) {
	// An unknown request was answered already (an abort denied it).
	_ = ss.ag.AnswerPermission(context.Background(), requestID, decision)
}
