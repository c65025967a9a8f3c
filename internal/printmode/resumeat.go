package printmode

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/protocol"
)

// ResumeAt keeps sess's messages up to and including the one that line
// (a line's uuid, or a message id) belongs to, and removes those after
// it, as Claude Code's --resume-session-at does.
func ResumeAt(ctx context.Context, sess *agent.Session, line string) error {
	msgs := sess.Messages().Messages
	at := -1
	for i, m := range msgs {
		if owns(m, line) {
			at = i
			break
		}
	}
	if at < 0 {
		return fmt.Errorf("--resume-session-at: no message %s in session %s", line, sess.ID())
	}
	for _, m := range msgs[at+1:] {
		if m.Role == protocol.RoleUser {
			// Everything from the next user message on goes.
			return sess.Rewind(ctx, m.ID)
		}
	}
	return nil
}

// owns reports whether line is m's id or the uuid of one of its lines.
func owns(m protocol.Message, line string) bool {
	if m.ID == line {
		return true
	}
	if m.Role != protocol.RoleAssistant {
		return false
	}
	for _, b := range m.Blocks {
		if b.Type == protocol.BlockTool && cclines.ToolResultUUID(m.ID, b.ToolID) == line {
			return true
		}
	}
	// A response has at least as many blocks as the message shows; the
	// blocks it does not show (empty text) are few.
	for n := range 2*len(m.Blocks) + 4 {
		if cclines.AssistantUUID(m.ID, n) == line {
			return true
		}
	}
	return false
}
