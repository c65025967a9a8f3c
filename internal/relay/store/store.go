// Package store keeps the relay's state in one bbolt file (Open), or — in
// cluster mode — in PostgreSQL, shared by the relay nodes of one chat
// account (OpenPostgres): the outbox of messages not yet taken by the
// platform, the inbox of users' questions not yet answered, the inbound
// messages already seen (de-duplication), and small values such as the
// long-poll cursor, WeChat's context tokens and the Claude Code session of
// each chat.
//
// A question enters the inbox in the same transaction that marks its
// inbound message seen, and leaves it in the same transaction that puts
// its answer in the outbox: whenever the process dies, a question seen is
// either answered in the outbox or still in the inbox — never neither.
// Every transaction is on disk (fsync) before the call returns.
//
// One process at a time has a state file open: a second Open of the same
// file fails, saying another process holds it. A state file the relay kept
// in SQLite before is migrated by the first Open: its rows are copied,
// with their ids, and the old file is kept as path+".sqlite".
//
// Message text lives here until delivered; credentials never do (the
// channels keep them in their own 0600 file).
//
// In PostgreSQL every write is fenced by the node's channel lease (Fence):
// its transaction first takes a share lock on the lease's row and goes on
// only if the row still names this node and epoch, so a node that lost the
// channel (it was paused past the lease's TTL) changes nothing once another
// took it, and a takeover waits for the writes in flight.
//
// A Store is safe for concurrent use. Close it once, after its users.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotFound is returned by Get for a key that has no value.
var ErrNotFound = errors.New("store: not found")

// ErrFenced is returned by a write of a PostgreSQL store whose node does
// not hold the channel's lease (never had it, or lost it).
var ErrFenced = errors.New("store: this node does not hold the channel's lease")

// Store is an open state file, or a relay account's state in PostgreSQL.
type Store struct {
	b backend
}

// backend keeps a Store's state: a bbolt file (boltBackend) or a relay
// account's rows in PostgreSQL (pgBackend). Its methods are the Store's of
// the same name, which add the error's context; each runs as one
// transaction.
type backend interface {
	// answer sets the ids of items as it adds them.
	answer(ctx context.Context, items []Item, question int64) error
	// ask sets q's id when it adds q, and reports whether it did.
	ask(ctx context.Context, key string, q *Question) (bool, error)
	questions(ctx context.Context, channel string) ([]Question, error)
	start(ctx context.Context, id int64) error
	drop(ctx context.Context, ids []int64) error
	pending(ctx context.Context, channel string) ([]Item, error)
	delivered(ctx context.Context, id int64) error
	claim(ctx context.Context, channel, key string, at time.Time) (bool, error)
	forget(ctx context.Context, before time.Time) error
	// get returns ErrNotFound for a key without a value.
	get(ctx context.Context, key string) (string, error)
	// put deletes the key for an empty value.
	put(ctx context.Context, key, value string) error
	close() error
}

// Lease names the channel lease a PostgreSQL store's writes are fenced
// by: the row of the leases table (store/pgstore) with this key, node and
// epoch.
type Lease struct {
	Key, Node string
	Epoch     int64
}

// Fence makes l the lease this store's writes are fenced by (PostgreSQL
// only; the zero Lease fences every write out).
func (s *Store) Fence(l Lease) {
	if pg, ok := s.b.(*pgBackend); ok {
		pg.fence(l)
	}
}

// Close closes the file or the connections.
func (s *Store) Close() error { return s.b.close() }

// Item is a message in the outbox.
type Item struct {
	ID      int64
	Channel string
	Chat    string
	Kind    string
	Text    string
	Created time.Time
}

// Enqueue adds a message to the outbox and returns it with its id; ids
// increase in the order messages are added.
func (s *Store) Enqueue(ctx context.Context, it Item) (Item, error) {
	items, err := s.Answer(ctx, []Item{it}, 0)
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

// Answer adds messages to the outbox and, when question is not 0, removes
// that question from the inbox, in one transaction. It returns the items
// with their ids.
func (s *Store) Answer(ctx context.Context, items []Item, question int64) ([]Item, error) {
	out := slices.Clone(items)
	if err := s.b.answer(ctx, out, question); err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", err)
	}
	return out, nil
}

// Question is a user's message to the agent that has no answer yet.
type Question struct {
	ID      int64
	Channel string
	Chat    string
	Text    string
	// Started says the agent began answering it: if it is still here
	// after a restart, the answer was cut off.
	Started bool
	Created time.Time
}

// Ask records an inbound message key, as Claim does, and when it is new
// adds q to the inbox in the same transaction. It returns q with its id,
// or false for a message seen before. An empty key is never a duplicate.
func (s *Store) Ask(ctx context.Context, key string, q Question) (Question, bool, error) {
	fresh, err := s.b.ask(ctx, key, &q)
	if err != nil {
		return Question{}, false, fmt.Errorf("store: ask: %w", err)
	}
	return q, fresh, nil
}

// Questions returns the inbox of a channel, oldest first.
func (s *Store) Questions(ctx context.Context, channel string) ([]Question, error) {
	qs, err := s.b.questions(ctx, channel)
	if err != nil {
		return nil, fmt.Errorf("store: questions: %w", err)
	}
	return qs, nil
}

// Start marks a question as being answered.
func (s *Store) Start(ctx context.Context, id int64) error {
	if err := s.b.start(ctx, id); err != nil {
		return fmt.Errorf("store: start: %w", err)
	}
	return nil
}

// Drop removes questions from the inbox unanswered (the user withdrew
// them: /stop, /new).
func (s *Store) Drop(ctx context.Context, ids ...int64) error {
	if err := s.b.drop(ctx, ids); err != nil {
		return fmt.Errorf("store: drop: %w", err)
	}
	return nil
}

// Pending returns the outbox of a channel, oldest first.
func (s *Store) Pending(ctx context.Context, channel string) ([]Item, error) {
	items, err := s.b.pending(ctx, channel)
	if err != nil {
		return nil, fmt.Errorf("store: pending: %w", err)
	}
	return items, nil
}

// Delivered removes a message from the outbox.
func (s *Store) Delivered(ctx context.Context, id int64) error {
	if err := s.b.delivered(ctx, id); err != nil {
		return fmt.Errorf("store: delivered: %w", err)
	}
	return nil
}

// Claim records an inbound message key of a channel and reports whether it
// is new: false means it was seen before and must not be handled again.
func (s *Store) Claim(ctx context.Context, channel, key string, at time.Time) (bool, error) {
	fresh, err := s.b.claim(ctx, channel, key, at)
	if err != nil {
		return false, fmt.Errorf("store: claim: %w", err)
	}
	return fresh, nil
}

// Forget drops the inbound keys of this store's channels recorded before t.
func (s *Store) Forget(ctx context.Context, before time.Time) error {
	if err := s.b.forget(ctx, before); err != nil {
		return fmt.Errorf("store: forget: %w", err)
	}
	return nil
}

// Get returns the value of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (string, error) {
	v, err := s.b.get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: get %s: %w", key, err)
	}
	return v, nil
}

// Put sets the value of key; an empty value deletes it.
func (s *Store) Put(ctx context.Context, key, value string) error {
	if err := s.b.put(ctx, key, value); err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return nil
}
