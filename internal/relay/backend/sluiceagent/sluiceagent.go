// Package sluiceagent is the relay's backend for sluice's own agent: one
// session per chat, driven through the session handle (package session)
// whether the agent runs in this process or in a cluster. A run is the
// session's events from the user's message to the session going idle;
// tool approvals arrive as protocol.PermissionRequest events and are
// answered from the chat. The session id of each chat is kept (in the
// relay's store, under backend.SessionKey) so that a restart continues the
// conversation.
//
// In this process (Config.Options), a message sent while a run goes on is
// steered into it (backend.Steerer). In a cluster (Config.Cluster), each
// chat's session is a session of the cluster (internal/cluster's Node, the
// session.Host of `sluice serve --nats --postgres`), run by the node
// holding its lease — normally the relay node holding the chat's channel —
// with its events in JetStream and its records and checkpoints in
// PostgreSQL. So a chat's session outlives its node: when the node dies
// mid-run another node takes the session over and ends the run as
// interrupted, and any `sluice serve` node of the cluster lists and opens
// it. There a question waits for the run before it (no steering): telling
// a steered message's own run from the one it was sent during needs the
// end of each piece of work in order with the events, which only a session
// of this process gives (session.Job's Done).
//
// The cluster tests are in package relay (TestChatAcrossNodes,
// TestClusterFailover), beside the NATS and PostgreSQL servers that
// package's tests start once.
package sluiceagent

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

// KV keeps each chat's session id (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Host runs a cluster's sessions (a *cluster.Node).
type Host interface {
	New(ctx context.Context, opts agent.Options) (session.Session, error)
	Open(ctx context.Context, id string, options func(workDir string) (agent.Options, error)) (session.Session, error)
}

// Cluster runs the chats' sessions in a cluster.
type Cluster struct {
	Host Host // required
	// Options returns the agent options of a session in workDir: those of
	// a chat's new session (in WorkDir), and those this node runs a chat's
	// session with when it takes it over. Approve must be nil, so that
	// approvals are asked in the chat.
	Options func(workDir string) agent.Options
	// WorkDir is where a chat's new session works.
	WorkDir string
}

// Config configures the backend: Options, or Cluster.
type Config struct {
	// Options returns the options of a chat's session run in this
	// process: provider, model, working directory, permission mode,
	// store. Approve must be nil, so that approvals are asked in the chat.
	Options func(chat string) agent.Options
	// Cluster, when set, runs the sessions in a cluster instead.
	Cluster *Cluster
	KV      KV // required
	Logger  *slog.Logger
}

// Backend runs a chat's agent session.
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

// Close closes every session (in a cluster, the chats' sessions on this
// node, their leases released).
func (b *Backend) Close() error { return b.opened.Close() }

// Open opens the chat's session when it has one, or starts a new one.
func (b *Backend) Open(ctx context.Context, chat string) (backend.Conversation, error) {
	c := &conversation{b: b, chat: chat}
	id, _ := b.cfg.KV.Get(ctx, backend.SessionKey(chat))
	s, err := b.session(ctx, chat, id)
	if err != nil {
		return nil, err
	}
	c.s = s
	b.opened.Add(c)
	if b.cfg.Cluster != nil {
		return c, nil
	}
	return steering{c}, nil
}

// session opens session id of chat, or a new one when id is "" or cannot
// be opened.
func (b *Backend) session(ctx context.Context, chat, id string) (session.Session, error) {
	var (
		s   session.Session
		err error
	)
	if cl := b.cfg.Cluster; cl != nil {
		s, err = b.clusterSession(ctx, cl, id)
	} else {
		s, err = b.localSession(b.cfg.Options(chat), id)
	}
	if err != nil {
		return nil, err
	}
	if s.ID() != id {
		if err := b.cfg.KV.Put(ctx, backend.SessionKey(chat), s.ID()); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// localSession restores session id from the store, or starts one.
func (b *Backend) localSession(opts agent.Options, id string) (session.Session, error) {
	if id != "" && opts.Store != nil {
		s, err := agent.Open(opts, id)
		if err == nil {
			return session.Local(s), nil
		}
		b.cfg.Logger.Warn("relay: cannot restore the chat's session; starting a new one", "session", id, "err", err)
	}
	s, err := agent.New(opts)
	if err != nil {
		return nil, err
	}
	return session.Local(s), nil
}

// clusterSession opens session id in the cluster, or starts one.
func (b *Backend) clusterSession(ctx context.Context, cl *Cluster, id string) (session.Session, error) {
	if id != "" {
		s, err := cl.Host.Open(ctx, id, func(dir string) (agent.Options, error) { return cl.Options(dir), nil })
		if err == nil {
			return s, nil
		}
		b.cfg.Logger.Warn("relay: cannot open the chat's session in the cluster; starting a new one", "session", id, "err", err)
	}
	return cl.Host.New(ctx, cl.Options(cl.WorkDir))
}

type conversation struct {
	b    *Backend
	chat string

	mu sync.Mutex
	s  session.Session
	// pending are the messages steered into the session (Steer) that no
	// run has settled yet, in the order given.
	pending []steered
}

// steered is a message given while a run went on.
type steered struct {
	id  string
	job session.Job
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
	id, job, err := s.SubmitMessage(ctx, text)
	if err != nil {
		sub.Close()
		return nil, err
	}
	r := &run{sub: sub, id: id, job: job, conv: c}
	if c.b.cfg.Cluster != nil {
		return r, nil
	}
	return steeredRun{r}, nil
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

// steering is a conversation of a session of this process: it takes
// messages while a run goes on.
type steering struct{ *conversation }

// Steer implements backend.Steerer: the session steers a message given
// while a run goes on into it, or runs it next.
func (c steering) Steer(ctx context.Context, text string) (string, error) {
	id, job, err := c.session().SubmitMessage(ctx, text)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.pending = append(c.pending, steered{id, job})
	c.mu.Unlock()
	return id, nil
}

// ownRun reports whether id is a pending steered message that did not join
// the run just ended: its userMessageAdded starts a run of its own.
func (c *conversation) ownRun(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending {
		if p.id == id {
			return !joined(p.job)
		}
	}
	return false
}

// joined reports whether job's message joined an earlier run.
func joined(job session.Job) bool {
	select {
	case <-job.Done():
		res, _ := job.Wait(context.Background())
		return res.SteeredInto != ""
	default:
		return false
	}
}

// run reads the session's events for one user message: from the message
// the job adds to the idle event after it. The events before the message
// are not its own: in a cluster, the end of a run a dead node left, which
// the node taking the session over publishes before it runs the message. A
// message an abort dropped before it was sent adds no message; its run is
// then empty: it ends when the job is done, dropped, or when the session
// is idle after a run began.
type run struct {
	sub     session.Subscription
	id      string // the message's id
	job     session.Job
	conv    *conversation
	mine    bool // its userMessageAdded was seen
	running bool // a run began since the submission
	sent    bool // the job ended, not dropped: its events will come
	ended   bool
	// carry is the first event of this run, read by the run before it
	// (a steered message's own run follows its run at once, without an
	// idle event between); after Next ended, it is the next run's.
	carry *protocol.Event
	// handed: the subscription went on to the next run (Settle).
	handed bool
}

func (r *run) Next(ctx context.Context) (protocol.Event, error) {
	if r.carry != nil && !r.ended {
		ev := *r.carry
		r.carry = nil
		return r.took(ev), nil
	}
	for !r.ended {
		nctx, cancel := context.WithCancel(ctx)
		watch := !r.mine && !r.sent
		if watch {
			// Until the message shows, its job's end (an abort dropped
			// it) also ends the wait.
			go func() {
				select {
				case <-r.job.Done():
					cancel()
				case <-nctx.Done():
				}
			}()
		}
		ev, err := r.sub.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil || !watch {
				return nil, err
			}
			select {
			case <-r.job.Done():
			default:
				return nil, err // the subscription ended
			}
			if res, _ := r.job.Wait(ctx); !res.Dropped {
				// It ran (a cluster's answer may come before its
				// events), or its node cannot say: its events end it.
				r.sent = true
			} else if r.sub.Pending() == 0 {
				r.ended = true
			}
			continue
		}
		if r.startsOwnRun(ev) {
			r.carry, r.ended = &ev, true
			break
		}
		if ev = r.took(ev); r.mine {
			return ev, nil
		}
	}
	return nil, io.EOF
}

// took notes what ev says of the run and returns it.
func (r *run) took(ev protocol.Event) protocol.Event {
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
	return ev
}

// startsOwnRun reports whether ev is the first event of a steered
// message's own run. Until this run's job is done every event is its own
// (a later job publishes only after), and a message steered into it is
// done, as joined, before it.
func (r *run) startsOwnRun(ev protocol.Event) bool {
	e, ok := ev.(protocol.UserMessageAdded)
	if !ok || e.Message.ID == r.id {
		return false
	}
	select {
	case <-r.job.Done():
	default:
		return false
	}
	return r.conv.ownRun(e.Message.ID)
}

// Result is empty: the answer is in the events (the router sends them).
func (r *run) Result() string { return "" }

// Close implements backend.Run; a subscription handed to the next run
// stays open for it.
func (r *run) Close() error {
	if !r.handed {
		r.sub.Close()
	}
	return nil
}

// steeredRun is a run of a session of this process, whose jobs end in
// order with its events.
type steeredRun struct{ *run }

// Result is the final answer as the agent reports it.
func (r steeredRun) Result() string {
	res, _ := r.job.Wait(context.Background())
	return res.Text
}

// Settle implements backend.SteeredRun.
func (r steeredRun) Settle() (joined, dropped []string, next backend.Run) {
	// The messages steered into this run are done before it is.
	<-r.job.Done()
	c := r.conv
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 {
		p := c.pending[0]
		c.pending = c.pending[1:]
		select {
		case <-p.job.Done():
			res, _ := p.job.Wait(context.Background())
			switch {
			case res.SteeredInto != "":
				joined = append(joined, p.id)
				continue
			case res.MessageID == "":
				// Dropped by an abort before it was sent.
				dropped = append(dropped, p.id)
				continue
			}
		default:
		}
		// A run of its own, on this run's subscription: its events follow
		// this run's (the first of them perhaps already read, carried).
		r.handed = true
		return joined, dropped, steeredRun{&run{sub: r.sub, id: p.id, job: p.job, conv: c, carry: r.carry}}
	}
	return joined, dropped, nil
}
