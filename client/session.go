package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// Update is one change of a session's list, in order: an event that was
// applied to it, or a snapshot that replaced it.
type Update struct {
	// Event is the applied event (possibly several adjacent deltas merged:
	// Header.FirstSeq). Nil for a snapshot.
	Event protocol.Event
	// Snapshot replaced the list (initialize, restore, clear, resync, a
	// rewind without receipt). Nil for an event.
	Snapshot *protocol.Snapshot
}

// Session is one session as the host follows it: its list, kept with the
// shared reducer, and its updates. Its methods are safe for concurrent use.
type Session struct {
	c  *Client
	id string

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change of the list
	info      wire.InitializeResult
	list      *protocol.List
	resyncing bool
	rewindReq string // the rewind in flight
	// idleSeq is the seq at which the list last became idle: Run and
	// WaitIdle wait for a run that ended after a given seq.
	idleSeq int64
	resyncs int

	// updates is the queue Next reads; adjacent deltas merge in it and a
	// snapshot supersedes what precedes it, so that a host that reads
	// slowly holds memory in proportion to the content, not the events.
	updates     []Update
	merger      protocol.Merger // grows the last queued delta
	updatesDone bool
	wake        chan struct{}
}

func newSession(c *Client, id string) *Session {
	return &Session{c: c, id: id, list: protocol.NewList(protocol.Snapshot{}), changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Info is the result of the initialize (or restore) that attached the
// session.
func (s *Session) Info() wire.InitializeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *Session) setInfo(res wire.InitializeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res.Snapshot, res.PendingPermissions = nil, nil
	s.info = res
}

// PendingPermissions returns the permission requests no one has answered
// yet, oldest first, as the host's list holds them.
func (s *Session) PendingPermissions() []protocol.PermissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list.PendingPermissions()
}

// Running reports whether the host's list says the agent is running.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list.Running()
}

// Messages returns a copy of the host's view state (messages, run state,
// pending permission requests) and its seq.
func (s *Session) Messages() protocol.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list.Snapshot()
}

// Seq is the seq the host's list reflects.
func (s *Session) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list.Seq()
}

// Resyncs counts the snapshots pulled because of a gap or an event that
// did not fit.
func (s *Session) Resyncs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resyncs
}

// Next returns the next update. It blocks until there is one, ctx is done
// or the connection has ended (ErrClosed, after the queued updates).
func (s *Session) Next(ctx context.Context) (Update, error) {
	for {
		s.mu.Lock()
		if len(s.updates) > 0 {
			u := s.updates[0]
			s.updates[0] = Update{}
			s.updates = s.updates[1:]
			if len(s.updates) == 0 {
				s.merger.Reset() // the tail it grew is handed out
			}
			s.mu.Unlock()
			return u, nil
		}
		done := s.updatesDone
		s.mu.Unlock()
		if done {
			return Update{}, ErrClosed
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return Update{}, ctx.Err()
		}
	}
}

// pushLocked queues u for Next.
func (s *Session) pushLocked(u Update) {
	switch {
	case u.Snapshot != nil:
		clear(s.updates)
		s.updates = append(s.updates[:0], u)
		s.merger.Reset()
	case len(s.updates) > 0 && s.updates[len(s.updates)-1].Event != nil:
		if m, ok := s.merger.Merge(s.updates[len(s.updates)-1].Event, u.Event); ok {
			s.updates[len(s.updates)-1].Event = m
			break
		}
		s.merger.Reset()
		s.updates = append(s.updates, u)
	default:
		s.merger.Reset()
		s.updates = append(s.updates, u)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) closeUpdates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updatesDone = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// reset replaces the list with snap (on the reader goroutine, at the place
// of the response that carried it). announce queues it as an update; a
// resumed list is not news to the host.
func (s *Session) reset(snap protocol.Snapshot, announce bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list.Reset(snap)
	s.resyncing = false
	if !snap.Running {
		s.idleSeq = max(s.idleSeq, snap.Seq)
	}
	if announce {
		c := snap.Clone()
		s.pushLocked(Update{Snapshot: &c})
	}
}

// apply applies a notification, pulling a snapshot when it does not fit.
func (s *Session) apply(ev protocol.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resyncing {
		return // the snapshot on its way covers it, or the events after it follow
	}
	err := s.list.Apply(ev)
	switch {
	case err == nil:
	case errors.Is(err, protocol.ErrStale):
		return
	default:
		s.c.log.Warn("host list out of step; pulling a snapshot", "session", s.id, "err", err)
		s.resyncs++
		s.resyncing = true
		go s.resync()
		return
	}
	if _, ok := ev.(protocol.RunStateChanged); ok && !s.list.Running() {
		s.idleSeq = ev.Head().Seq
	}
	s.pushLocked(Update{Event: ev})
}

// resync pulls a snapshot; its hook replaces the list at the response's
// place in the stream, after which the server's events continue it.
func (s *Session) resync() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := s.getMessages(ctx); err != nil {
		s.c.log.Warn("resync failed", "session", s.id, "err", err)
	}
}

func (s *Session) getMessages(ctx context.Context) (protocol.Snapshot, error) {
	var snap protocol.Snapshot
	_, err := s.c.call(ctx, wire.MethodGetMessages, wire.SessionParams{SessionID: s.id}, func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &snap); err != nil {
			return fmt.Errorf("client: decode getMessages result: %w", err)
		}
		s.reset(snap, true)
		return nil
	})
	return snap, err
}

// GetMessages pulls the server's list, replaces the host's with it (an
// update carries it) and returns it.
func (s *Session) GetMessages(ctx context.Context) (protocol.Snapshot, error) {
	return s.getMessages(ctx)
}

// Send sends a user message and returns its id without waiting for the
// run. With force, the work in progress is aborted first.
func (s *Session) Send(ctx context.Context, text string, force bool) (string, error) {
	var res wire.SendMessageResult
	err := s.c.Call(ctx, wire.MethodSendMessage, wire.SendMessageParams{SessionID: s.id, Text: text, Force: force}, &res)
	return res.MessageID, err
}

// Run sends a user message and waits until the session is idle after it
// (the host's list then holds the whole run).
func (s *Session) Run(ctx context.Context, text string) (string, error) {
	s.mu.Lock()
	from := s.list.Seq()
	s.mu.Unlock()
	id, err := s.Send(ctx, text, false)
	if err != nil {
		return "", err
	}
	return id, s.waitFor(ctx, func() bool {
		return s.list.Index(id) >= 0 && !s.list.Running() && s.idleSeq > from
	})
}

// WaitIdle waits until a run that ends after seq has ended, for a host
// that sent work without Run.
func (s *Session) WaitIdle(ctx context.Context, seq int64) error {
	return s.waitFor(ctx, func() bool { return !s.list.Running() && s.idleSeq > seq })
}

// waitFor waits until cond (called with s.mu held) holds.
func (s *Session) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		done, changed := s.updatesDone, s.changed
		s.mu.Unlock()
		if done {
			return ErrClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Abort stops the work in progress (keeping what streamed) and drops the
// queued work.
func (s *Session) Abort(ctx context.Context, reason string) error {
	return s.c.Call(ctx, wire.MethodAbort, wire.AbortParams{SessionID: s.id, Reason: reason}, nil)
}

// Rewind removes the last occurrence of user message messageID and what
// follows. The host's list is cut by the messagesRewound event, which the
// server sends before the receipt, not by the receipt; OK false means
// nothing changed. A receipt that does not belong to the rewind in flight
// (superseded by a newer Rewind) is returned with ErrStaleReceipt.
func (s *Session) Rewind(ctx context.Context, messageID string) (wire.RewindResult, error) {
	var b [8]byte
	rand.Read(b[:])
	reqID := "rw-" + hex.EncodeToString(b[:])
	s.mu.Lock()
	s.rewindReq = reqID
	s.mu.Unlock()
	var res wire.RewindResult
	err := s.c.Call(ctx, wire.MethodRewind, wire.RewindParams{SessionID: s.id, MessageID: messageID, RequestID: reqID}, &res)
	s.mu.Lock()
	current := s.rewindReq == reqID
	if current {
		s.rewindReq = ""
	}
	s.mu.Unlock()
	if err != nil {
		return res, err
	}
	if !current || res.RequestID != reqID {
		return res, ErrStaleReceipt
	}
	return res, nil
}

// Clear empties the session; the host's list is replaced by the snapshot
// the server answers with.
func (s *Session) Clear(ctx context.Context) error {
	_, err := s.c.call(ctx, wire.MethodClear, wire.SessionParams{SessionID: s.id}, func(raw json.RawMessage) error {
		var snap protocol.Snapshot
		if err := json.Unmarshal(raw, &snap); err != nil {
			return fmt.Errorf("client: decode clear result: %w", err)
		}
		s.reset(snap, true)
		return nil
	})
	return err
}

// Compact folds the model's context into a summary, appended to the list
// as a compact block (compactBlockAdded), and waits for it.
func (s *Session) Compact(ctx context.Context) error {
	return s.c.Call(ctx, wire.MethodCompact, wire.SessionParams{SessionID: s.id}, nil)
}

// Bang runs a shell command as the user and waits for it to end; it
// returns the id of the user message that holds it.
func (s *Session) Bang(ctx context.Context, command string) (string, error) {
	var res wire.BangResult
	err := s.c.Call(ctx, wire.MethodBang, wire.BangParams{SessionID: s.id, Command: command}, &res)
	return res.MessageID, err
}

// Ask answers a side question (/btw) from the session's context without
// entering it: nothing of it is published or kept.
func (s *Session) Ask(ctx context.Context, question string) (string, error) {
	var res wire.AskResult
	err := s.c.Call(ctx, wire.MethodAsk, wire.AskParams{SessionID: s.id, Question: question}, &res)
	return res.Answer, err
}

// SetModel changes the model for the next requests.
func (s *Session) SetModel(ctx context.Context, model string) error {
	return s.c.Call(ctx, wire.MethodSetModel, wire.SetModelParams{SessionID: s.id, Model: model}, nil)
}

// SetPermissionMode changes the permission mode.
func (s *Session) SetPermissionMode(ctx context.Context, mode protocol.PermissionMode) error {
	return s.c.Call(ctx, wire.MethodSetPermissionMode, wire.SetPermissionModeParams{SessionID: s.id, PermissionMode: mode}, nil)
}

// AnswerPermission answers a permissionRequest event with
// protocol.DecisionAllow, DecisionAllowAlways or DecisionDeny.
func (s *Session) AnswerPermission(ctx context.Context, requestID string, decision protocol.Decision) error {
	return s.c.Call(ctx, wire.MethodPermissionResponse, wire.PermissionResponseParams{SessionID: s.id, RequestID: requestID, Decision: decision}, nil)
}

// Detach stops the session's notifications on this connection; the
// session goes on in the server.
func (s *Session) Detach(ctx context.Context) error {
	err := s.c.Call(ctx, wire.MethodDetach, wire.SessionParams{SessionID: s.id}, nil)
	if err == nil {
		s.c.mu.Lock()
		delete(s.c.sessions, s.id)
		s.c.mu.Unlock()
		s.closeUpdates()
	}
	return err
}
