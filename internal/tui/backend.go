package tui

import (
	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/session"
)

// backend is what the UI asks of a session: the handle every face drives
// (session.Session), and the memory files of the agent it runs. The UI's
// own agent provides it (agentBackend); the frame tests use a fake that
// records the calls, and drive the UI with scripted events instead of a
// subscription.
//
// Rewind and Clear block until the work ends: the UI calls them from
// Bubble Tea commands, never from Update. The other methods return at
// once; SubmitMessage, SubmitBang and SubmitCompact queue the work in the
// order they are called (a message sent while a run is going joins it at
// its next model request) and return a Job to wait on.
type backend interface {
	session.Session
	// Memory lists the memory files joined to the system prompt (/memory).
	Memory() []agent.MemoryFile
}

// agentBackend is a session of this process.
type agentBackend struct {
	session.Session
	as *agent.Session
}

func newAgentBackend(as *agent.Session) agentBackend {
	return agentBackend{Session: session.Local(as), as: as}
}

func (b agentBackend) Memory() []agent.MemoryFile { return b.as.Memory() }
