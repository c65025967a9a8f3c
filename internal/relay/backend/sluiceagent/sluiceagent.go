// Package sluiceagent is the relay's default backend: sluice's own agent,
// one session per chat. A run is the session's events from the user's
// message to the session going idle; tool approvals arrive as
// protocol.PermissionRequest events and are answered from the chat. The
// session id of each chat is kept (in the relay's store) so that a restart
// continues the conversation from the agent's session file.
package sluiceagent

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/protocol"
)

// KV keeps each chat's session id (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Config configures the backend.
type Config struct {
	// Options returns the options of a chat's session: provider, model,
	// working directory, permission mode, store. Approve must be nil, so
	// that approvals are asked in the chat.
	Options func(chat string) agent.Options
	KV      KV // required
	Logger  *slog.Logger
}

// Backend runs sluice agent sessions.
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

// Name is "sluice".
func (b *Backend) Name() string { return "sluice" }

// Close closes every session.
func (b *Backend) Close() error { return b.opened.Close() }

// Open restores the chat's session when it has one in the store, or starts
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

// session opens session id of chat, or a new one when id is "" or cannot
// be restored.
func (b *Backend) session(ctx context.Context, chat, id string) (*agent.Session, error) {
	opts := b.cfg.Options(chat)
	if id != "" && opts.Store != nil {
		s, err := agent.Open(opts, id)
		if err == nil {
			return s, nil
		}
		b.cfg.Logger.Warn("relay: cannot restore the chat's session; starting a new one", "session", id, "err", err)
	}
	s, err := agent.New(opts)
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
	s  *agent.Session
	// pending are the messages steered into the session (Steer) that no
	// run has settled yet, in the order given.
	pending []*agent.Handle
}

func (c *conversation) session() *agent.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

func (c *conversation) Start(ctx context.Context, text string) (backend.Run, error) {
	s := c.session()
	// Subscribe first: no event of the run can slip by.
	sub := s.Subscribe(agent.SubscribeOptions{})
	h, err := s.Submit(ctx, text)
	if err != nil {
		sub.Close()
		return nil, err
	}
	return &run{sub: sub, h: h, conv: c}, nil
}

// Steer implements backend.Steerer: the session steers a message given
// while a run goes on into it, or runs it next.
func (c *conversation) Steer(ctx context.Context, text string) (string, error) {
	h, err := c.session().Submit(ctx, text)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.pending = append(c.pending, h)
	c.mu.Unlock()
	return h.ID(), nil
}

// ownRun reports whether id is a pending steered message that did not join
// the run just ended: its userMessageAdded starts a run of its own.
func (c *conversation) ownRun(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.pending {
		if h.ID() == id {
			return !joined(h)
		}
	}
	return false
}

// joined reports whether h's message joined an earlier run.
func joined(h *agent.Handle) bool {
	select {
	case <-h.Done():
		res, _ := h.Wait(context.Background())
		return res.SteeredInto != ""
	default:
		return false
	}
}

func (c *conversation) Abort(reason string) { c.session().Abort(reason) }

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

func (c *conversation) Compact(ctx context.Context) error { return c.session().Compact(ctx) }
func (c *conversation) Model() string                     { return c.session().Model() }

func (c *conversation) SetModel(name string) error {
	c.session().SetModel(name)
	return nil
}

func (c *conversation) AnswerPermission(requestID string, decision protocol.Decision) error {
	return c.session().AnswerPermission(requestID, decision)
}

func (c *conversation) Ask(ctx context.Context, question string) (string, error) {
	return c.session().Ask(ctx, question, nil)
}

func (c *conversation) Session() string { return c.session().ID() }
func (c *conversation) Close() error    { return c.session().Close() }

// run reads the session's events for one user message: from the message
// the job adds to the idle event after it. A job dropped by an abort
// before it started adds no message; its run is then empty.
type run struct {
	sub   *agent.Subscription
	h     *agent.Handle
	conv  *conversation
	mine  bool // our user message was seen
	ended bool
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
		if !r.mine {
			// Until the job starts, its end (an abort dropped it) also
			// ends the wait.
			go func() {
				select {
				case <-r.h.Done():
					cancel()
				case <-nctx.Done():
				}
			}()
		}
		ev, err := r.sub.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && !r.mine && r.sub.Pending() == 0 {
				// The job ended without starting (dropped by an abort).
				r.ended = true
				break
			}
			if ctx.Err() == nil && !r.mine {
				continue
			}
			return nil, err
		}
		if r.startsOwnRun(ev) {
			r.carry, r.ended = &ev, true
			break
		}
		return r.took(ev), nil
	}
	return nil, io.EOF
}

// took notes what ev says of the run and returns it.
func (r *run) took(ev protocol.Event) protocol.Event {
	switch e := ev.(type) {
	case protocol.UserMessageAdded:
		if e.Message.ID == r.h.ID() {
			r.mine = true
		}
	case protocol.RunStateChanged:
		if e.State == protocol.RunIdle && r.mine {
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
	if !ok || e.Message.ID == r.h.ID() {
		return false
	}
	select {
	case <-r.h.Done():
	default:
		return false
	}
	return r.conv.ownRun(e.Message.ID)
}

// Settle implements backend.SteeredRun.
func (r *run) Settle() (joined, dropped []string, next backend.Run) {
	// The messages steered into this run are done before it is.
	<-r.h.Done()
	c := r.conv
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 {
		h := c.pending[0]
		c.pending = c.pending[1:]
		select {
		case <-h.Done():
			res, _ := h.Wait(context.Background())
			switch {
			case res.SteeredInto != "":
				joined = append(joined, h.ID())
				continue
			case res.MessageID == "":
				// Dropped by an abort before it was sent.
				dropped = append(dropped, h.ID())
				continue
			}
		default:
		}
		// A run of its own, on this run's subscription: its events follow
		// this run's (the first of them perhaps already read, carried).
		r.handed = true
		return joined, dropped, &run{sub: r.sub, h: h, conv: c, carry: r.carry}
	}
	return joined, dropped, nil
}

// Result is the final answer as the agent reports it.
func (r *run) Result() string {
	res, _ := r.h.Wait(context.Background())
	return res.Text
}

// Close implements backend.Run; a subscription handed to the next run
// stays open for it.
func (r *run) Close() error {
	if !r.handed {
		r.sub.Close()
	}
	return nil
}
