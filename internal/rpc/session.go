package rpc

import (
	"errors"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/wire"
)

// local wraps a session of this process: its subscriptions hold the
// session's model stream back past Options.MaxQueuedBytes queued bytes.
func (s *Server) local(as *agent.Session) session.Session {
	return session.LocalBounded(as, s.opts.MaxQueuedBytes)
}

// isClosed reports whether err says the session is closed.
func isClosed(err error) bool {
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr.Code == wire.CodeSessionClosed
	}
	return errors.Is(err, agent.ErrClosed)
}
