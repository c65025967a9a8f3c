package printmode

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// The uuids of the assistant and user lines derive from the session's
// messages, so that a later run can resume a session at a line
// (--resume-session-at, the SDK's resumeSessionAt): the line's uuid names
// the message it belongs to.
var lineSpace = uuid.MustParse("5f0c7a52-3a53-4d0e-9a43-6c1b2b8f1d7e")

// assistantUUID is the uuid of the n-th assistant line (0 for the first)
// of the session's assistant message msgID; random while the message is
// not known.
func assistantUUID(msgID string, n int) string {
	if msgID == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(lineSpace, []byte(msgID+"/"+strconv.Itoa(n))).String()
}

// toolResultUUID is the uuid of the user line with the result of tool call
// toolID of the session's assistant message msgID.
func toolResultUUID(msgID, toolID string) string {
	if msgID == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(lineSpace, []byte(msgID+"/tool/"+toolID)).String()
}

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
		if b.Type == protocol.BlockTool && toolResultUUID(m.ID, b.ToolID) == line {
			return true
		}
	}
	// A response has at least as many blocks as the message shows; the
	// blocks it does not show (empty text) are few.
	for n := range 2*len(m.Blocks) + 4 {
		if assistantUUID(m.ID, n) == line {
			return true
		}
	}
	return false
}
