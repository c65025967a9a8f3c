package cclines

import (
	"strconv"

	"github.com/google/uuid"
)

// The uuids of the assistant and user lines derive from the session's
// messages, so that a later run can resume a session at a line
// (--resume-session-at, the SDK's resumeSessionAt): the line's uuid names
// the message it belongs to (package printmode's ResumeAt).
var lineSpace = uuid.MustParse("5f0c7a52-3a53-4d0e-9a43-6c1b2b8f1d7e")

// AssistantUUID is the uuid of the n-th assistant line (0 for the first)
// of the session's assistant message msgID; random while the message is
// not known.
func AssistantUUID(msgID string, n int) string {
	if msgID == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(lineSpace, []byte(msgID+"/"+strconv.Itoa(n))).String()
}

// ToolResultUUID is the uuid of the user line with the result of tool call
// toolID of the session's assistant message msgID.
func ToolResultUUID(msgID, toolID string) string {
	if msgID == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(lineSpace, []byte(msgID+"/tool/"+toolID)).String()
}
