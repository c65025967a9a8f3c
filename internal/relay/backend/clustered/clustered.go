// Package clustered is the relay's sluice backend in cluster mode: each
// chat's session is a session of the cluster (internal/cluster's Node, the
// session.Session of `sluice serve --nats --postgres`), run by the node holding
// its lease — normally the relay node holding the chat's channel — with its
// events in JetStream and its records and checkpoints in PostgreSQL. So a
// chat's session outlives its node: when the node dies mid-run another
// node takes the session over and ends the run as interrupted, and any
// `sluice serve` node of the cluster lists and opens it.
//
// A question waits for the run before it (no steering): the relay starts
// one run at a time, and a run is the session's events from the question's
// submission to the session going idle.
//
// Its tests are in package relay (TestChatAcrossNodes, TestClusterFailover),
// beside the NATS and PostgreSQL servers that package's tests start once.
package clustered

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// Host runs the cluster's sessions (a *cluster.Node).
type Host interface {
	New(ctx context.Context, opts agent.Options) (session.Session, error)
	Open(ctx context.Context, id string, options func(workDir string) (agent.Options, error)) (session.Session, error)
}

// KV keeps each chat's session id (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Config configures the backend.
type Config struct {
	Host Host // required
	// Options returns the agent options of a session in workDir: those of
	// a chat's new session (in the relay's working directory), and those
	// this node runs a chat's session with when it takes it over. Approve
	// must be nil, so that approvals are asked in the chat.
	Options func(workDir string) agent.Options
	// WorkDir is where a chat's new session works.
	WorkDir string
	KV      KV // required
	Logger  *slog.Logger
}

// Backend opens chats' cluster sessions.
type Backend struct {
	cfg    Config
	opened backend.Opened
}

// New returns the backend.
func New(cfg Config) *Backend {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Backend{cfg: cfg}
}

// Name is "sluice", the agent's.
func (b *Backend) Name() string { return "sluice" }

// Close closes the chats' sessions on this node (their leases released).
func (b *Backend) Close() error { return b.opened.Close() }

// Open opens the chat's session in the cluster when it has one, or starts
// a new one.
func (b *Backend) Open(ctx context.Context, chat string) (backend.Conversation, error) {
	c := &conversation{b: b, chat: chat}
	id, _ := b.cfg.KV.Get(ctx, backend.SessionKey(chat))
	s, err := b.session(ctx, chat, id)
	if err != nil {
		return nil, err
	}
	c.s = s
	b.opened.Add(c)
	return c, nil
}

// session opens session id, or a new one when id is "" or the cluster
// cannot open it.
func (b *Backend) session(ctx context.Context, chat, id string) (session.Session, error) {
	if id != "" {
		s, err := b.cfg.Host.Open(ctx, id, func(dir string) (agent.Options, error) { return b.cfg.Options(dir), nil })
		if err == nil {
			return s, nil
		}
		b.cfg.Logger.Warn("relay: cannot open the chat's session in the cluster; starting a new one", "session", id, "err", err)
	}
	s, err := b.cfg.Host.New(ctx, b.cfg.Options(b.cfg.WorkDir))
	if err != nil {
		return nil, err
	}
	if err := b.cfg.KV.Put(ctx, backend.SessionKey(chat), s.ID()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type conversation struct {
	b    *Backend
	chat string

	mu sync.Mutex
	s  session.Session
}

func (c *conversation) session() session.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// Start submits text and returns the run that reads the session's events
// until it is idle again.
func (c *conversation) Start(ctx context.Context, text string) (backend.Run, error) {
	s := c.session()
	// Subscribe first: no event of the run can slip by.
	_, sub := s.SnapshotAndSubscribe()
	id, err := s.Submit(ctx, text, false)
	if err != nil {
		sub.Close()
		return nil, err
	}
	return &run{sub: sub, id: id}, nil
}

func (c *conversation) Abort(reason string) {
	if err := c.session().Abort(context.Background(), reason); err != nil {
		c.b.cfg.Logger.Warn("relay: abort failed", "chat", c.chat, "err", err)
	}
}

func (c *conversation) Reset(ctx context.Context) error {
	s, err := c.b.session(ctx, c.chat, "")
	if err != nil {
		return err
	}
	c.mu.Lock()
	old := c.s
	c.s = s
	c.mu.Unlock()
	return old.Close()
}

func (c *conversation) Compact(ctx context.Context) error {
	job, err := c.session().SubmitCompact(ctx)
	if err != nil {
		return err
	}
	_, err = job.Wait(ctx)
	return err
}

func (c *conversation) Model() string { return c.session().Model() }

func (c *conversation) SetModel(name string) error {
	return c.session().SetModel(context.Background(), name)
}

func (c *conversation) AnswerPermission(requestID string, decision protocol.Decision) error {
	return c.session().AnswerPermission(context.Background(), requestID, decision)
}

func (c *conversation) Ask(ctx context.Context, question string) (string, error) {
	return c.session().Ask(ctx, question)
}

func (c *conversation) Session() string { return c.session().ID() }
func (c *conversation) Close() error    { return c.session().Close() }

// run reads the session's events for one question: from the question's
// message until the session is idle after it. The events before the
// message are not the question's: the end of a run a dead node left,
// which the node taking the session over publishes before it runs the
// question. A question that an abort dropped before it was sent adds no
// message: its run ends, empty, when the session is idle after a run
// began.
type run struct {
	sub     session.Subscription
	id      string // the question's message id
	mine    bool   // its userMessageAdded was seen
	running bool   // a run began since the submission
	ended   bool
}

func (r *run) Next(ctx context.Context) (protocol.Event, error) {
	for !r.ended {
		ev, err := r.sub.Next(ctx)
		if err != nil {
			return nil, err
		}
		switch e := ev.(type) {
		case protocol.UserMessageAdded:
			if e.Message.ID == r.id {
				r.mine = true
			}
		case protocol.RunStateChanged:
			switch {
			case e.State == protocol.RunRunning:
				r.running = true
			case e.State == protocol.RunIdle && (r.mine || r.running):
				r.ended = true
			}
		}
		if r.mine {
			return ev, nil
		}
	}
	return nil, io.EOF
}

// Result is empty: the answer is in the events (the router sends it).
func (r *run) Result() string { return "" }

func (r *run) Close() error {
	r.sub.Close()
	return nil
}
