package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

// ErrServerClosed is returned by ServeConn after Close.
var ErrServerClosed = errors.New("rpc: server closed")

// SessionConfig is what a host asked for when a session is created or
// restored: the params of initialize (or restoreSession).
type SessionConfig struct {
	// WorkingDirectory is absolute: the host's, or the server's default.
	WorkingDirectory string
	PermissionMode   protocol.PermissionMode
	Model            string
	// RestoreID is the id of the stored session being restored; empty for
	// a new session.
	RestoreID string
}

// Options configure a Server.
type Options struct {
	// NewSession returns the agent options of a new or restored session
	// (provider, model, tools, ...). It is required. The server then sets
	// WorkDir from the config, PermissionMode and Model when the config's
	// are not empty, and Store when the returned options have none.
	NewSession func(ctx context.Context, cfg SessionConfig) (agent.Options, error)
	// Store holds the sessions that listSessions lists and that
	// restoreSession and initialize with a sessionId restore. Nil: no
	// stored sessions.
	Store store.Store
	// WorkDir is the default working directory (default: the process's).
	WorkDir string
	// MaxMessageBytes is announced in the capabilities: the limit the
	// connections enforce on one incoming message.
	MaxMessageBytes int
	// MaxQueuedBytes, when positive, bounds the events queued for a
	// connection that does not read them (agent.SubscribeOptions
	// MaxPendingBytes): past it, its session's model stream waits for the
	// host instead of the queue growing. Nothing is dropped. Zero: the
	// queue is bounded by the content streamed (adjacent deltas merge),
	// and a slow connection never holds a session back — what a server
	// with several viewers of one session wants.
	MaxQueuedBytes int
	// Logger receives diagnostics (default: discarded). Never stdout.
	Logger *slog.Logger
	// Version is reported in serverInfo.
	Version string
	// Host, when set, runs the sessions: the server is a node of a
	// cluster. Nil: sessions run in this process.
	Host session.Host
}

// Server serves the host protocol to any number of connections and holds
// the sessions they share: a session started or restored on one connection
// can be attached by others (initialize with its sessionId), and every
// attached connection receives its events live. All methods are safe for
// concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	// ctx bounds the work that outlives a request's connection (bang,
	// compact); Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	ops    sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*entry
	closed   bool
}

// entry is a running session, or one being restored (ready not closed yet).
type entry struct {
	ready chan struct{}
	sess  session.Session
	epoch string
	err   error
}

// NewServer returns a server. Call Close when done with it.
func NewServer(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, sessions: map[string]*entry{}}
}

// Close stops the server's sessions (aborting their work; what streamed is
// kept and their files are flushed and closed) and waits for the work that
// outlived its connection. Connections still being served end as their
// sessions close; ServeConn returns once their peer or ctx ends them.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	entries := make([]*entry, 0, len(s.sessions))
	for _, e := range s.sessions {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	s.cancel()
	var errs []error
	for _, e := range entries {
		<-e.ready
		if e.sess != nil {
			if err := e.sess.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close session %s: %w", e.sess.ID(), err))
			}
		}
	}
	s.ops.Wait()
	return errors.Join(errs...)
}

// goOp runs f on its own goroutine, tracked by Close.
func (s *Server) goOp(f func()) {
	s.ops.Add(1)
	go func() {
		defer s.ops.Done()
		f()
	}()
}

func (s *Server) workDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if s.opts.WorkDir != "" {
		return s.opts.WorkDir, nil
	}
	return os.Getwd()
}

// agentOptions asks the factory for a session's options and applies cfg.
func (s *Server) agentOptions(ctx context.Context, cfg SessionConfig) (agent.Options, *wire.Error) {
	if s.opts.NewSession == nil {
		return agent.Options{}, wire.Errorf(wire.CodeInternalError, "the server has no session factory")
	}
	dir, err := s.workDir(cfg.WorkingDirectory)
	if err != nil {
		return agent.Options{}, wire.Errorf(wire.CodeRequestFailed, "no working directory: %v", err)
	}
	cfg.WorkingDirectory = dir
	opts, err := s.opts.NewSession(ctx, cfg)
	if err != nil {
		return agent.Options{}, wire.Errorf(wire.CodeRequestFailed, "cannot start a session: %v", err)
	}
	opts.WorkDir = cfg.WorkingDirectory
	if cfg.PermissionMode != "" {
		opts.PermissionMode = cfg.PermissionMode
	}
	if cfg.Model != "" {
		opts.Model = cfg.Model
	}
	if opts.Store == nil {
		opts.Store = s.opts.Store
	}
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	return opts, nil
}

// newSession starts and registers a new session.
func (s *Server) newSession(ctx context.Context, cfg SessionConfig) (*entry, *wire.Error) {
	opts, rerr := s.agentOptions(ctx, cfg)
	if rerr != nil {
		return nil, rerr
	}
	var sess session.Session
	if s.opts.Host != nil {
		sess, err := s.opts.Host.New(ctx, opts)
		if err != nil {
			return nil, restoreError("", err)
		}
		e := &entry{ready: make(chan struct{}), sess: sess, epoch: s.epoch(sess.ID())}
		return s.register(e)
	}
	as, err := agent.New(opts)
	if err != nil {
		return nil, wire.Errorf(wire.CodeRequestFailed, "cannot start a session: %v", err)
	}
	sess = s.local(as)
	return s.register(&entry{ready: make(chan struct{}), sess: sess, epoch: s.epoch(sess.ID())})
}

// epoch names a run of session id. In a cluster a session's seq goes on
// across nodes and restarts, so its epoch is the same wherever it runs.
func (s *Server) epoch(id string) string {
	if s.opts.Host != nil {
		return "cluster:" + id
	}
	return uuid.NewString()
}

// register makes a new session's entry findable.
func (s *Server) register(e *entry) (*entry, *wire.Error) {
	sess := e.sess
	close(e.ready)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Close()
		return nil, wire.Errorf(wire.CodeSessionClosed, "the server is shutting down")
	}
	s.sessions[sess.ID()] = e
	s.mu.Unlock()
	s.log.Info("session started", "session", sess.ID(), "workDir", sess.WorkDir())
	return e, nil
}

// session returns the running session id, restoring it from the store
// (in cfg.WorkingDirectory's project) when it is not running. Concurrent
// calls for one id restore it once.
func (s *Server) session(ctx context.Context, id string, cfg SessionConfig) (*entry, *wire.Error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, wire.Errorf(wire.CodeSessionClosed, "the server is shutting down")
	}
	e, ok := s.sessions[id]
	if ok {
		s.mu.Unlock()
		<-e.ready
		if e.err == nil {
			return e, nil
		}
		return nil, restoreError(id, e.err)
	}
	e = &entry{ready: make(chan struct{})}
	s.sessions[id] = e
	s.mu.Unlock()

	cfg.RestoreID = id
	e.sess, e.err = s.restore(ctx, id, cfg)
	e.epoch = s.epoch(id)
	s.mu.Lock()
	closed := s.closed
	if e.err != nil {
		delete(s.sessions, id) // a later request may try again
	}
	s.mu.Unlock()
	close(e.ready)
	if e.err != nil {
		return nil, restoreError(id, e.err)
	}
	if closed {
		// Close may have missed it: it collected the entries before this
		// one was ready, or after; closing twice is harmless.
		e.sess.Close()
		return nil, wire.Errorf(wire.CodeSessionClosed, "the server is shutting down")
	}
	s.log.Info("session restored", "session", id, "workDir", e.sess.WorkDir())
	return e, nil
}

func (s *Server) restore(ctx context.Context, id string, cfg SessionConfig) (session.Session, error) {
	if s.opts.Host != nil {
		return s.opts.Host.Open(ctx, id, func(dir string) (agent.Options, error) {
			cfg.WorkingDirectory = dir
			opts, rerr := s.agentOptions(ctx, cfg)
			if rerr != nil {
				return agent.Options{}, rerr
			}
			return opts, nil
		})
	}
	opts, rerr := s.agentOptions(ctx, cfg)
	if rerr != nil {
		return nil, rerr
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: %s (the server has no session store)", store.ErrNotFound, id)
	}
	as, err := agent.Open(opts, id)
	if err != nil {
		return nil, err
	}
	return s.local(as), nil
}

func restoreError(id string, err error) *wire.Error {
	var rerr *wire.Error
	switch {
	case errors.As(err, &rerr):
		return rerr
	case errors.Is(err, store.ErrNotFound):
		return wire.Errorf(wire.CodeSessionNotFound, "no session %q: %v", id, err)
	}
	return wire.Errorf(wire.CodeRequestFailed, "cannot restore session %q: %v", id, err)
}

// live reports whether session id is running.
func (s *Server) live(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[id]
	return ok && e.sess != nil
}

// liveSessions returns the running sessions.
func (s *Server) liveSessions() []session.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []session.Session
	for _, e := range s.sessions {
		if e.sess != nil {
			out = append(out, e.sess)
		}
	}
	return out
}

// ServeConn serves one connection until its peer closes it (Read returns
// io.EOF: ServeConn returns nil), ctx is done, or a read or write fails.
// It closes conn before returning. Its sessions keep running: they belong
// to the server, and other connections may be attached to them.
//
// Requests are read and started in arrival order. Most are answered at
// once; bang and compact are answered when they end, while later requests
// are served. Notifications for a session are written in seq order by the
// connection's one writer, interleaved with responses so that:
//   - the result of initialize, restoreSession, getMessages and clear
//     (which carry a snapshot at seq S) is followed by exactly the events
//     after S;
//   - the answer to rewind, clear, compact and bang comes after the events
//     the operation published (for clear and a rewind without requestId,
//     the answer's snapshot is taken after them).
//
// A slow peer never blocks a session: undelivered events wait in the
// session's subscription queue, where adjacent deltas merge.
func (s *Server) ServeConn(ctx context.Context, conn wire.Conn) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		conn.Close()
		return ErrServerClosed
	}
	c := newConnection(ctx, s, conn)
	return c.serve()
}

// respondJSON is a request's eventual answer: the response bytes, or nil
// for a notification.
func (c *connection) encodeReply(req *Request, result any, rerr *wire.Error) []byte {
	if req.IsNotification() {
		if rerr != nil {
			c.s.log.Debug("notification failed", "method", req.Method, "err", rerr.Message)
		}
		return nil
	}
	msg, err := encodeResponse(req.ID, result, rerr)
	if err != nil {
		c.s.log.Error("cannot encode a response", "method", req.Method, "err", err)
		msg, _ = encodeResponse(req.ID, nil, wire.Errorf(wire.CodeInternalError, "internal error: %v", err))
	}
	return msg
}
