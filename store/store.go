// Package store persists agent sessions. A session is an ordered log of
// records — opaque JSON values that package agent writes as the session
// changes and replays to restore it — kept under the working directory the
// session ran in.
//
// Store is the interface the agent persists through; JSONL (one
// append-only file per session) is the default implementation. Another
// implementation (a database) only has to keep each session's records in
// the order they were appended and make an Append durable before it
// returns.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) for a session that is not stored.
var ErrNotFound = errors.New("session not found")

// ErrExists is returned (wrapped) by Create for a session already stored.
var ErrExists = errors.New("session already exists")

// Key names a stored session: the working directory it runs in (sessions
// are listed per directory) and its id.
type Key struct {
	WorkDir string
	ID      string
}

// Store keeps sessions. Its methods are safe for concurrent use.
type Store interface {
	// Create starts the log of a new session; it fails with ErrExists
	// when the session is already stored.
	Create(ctx context.Context, key Key) (Log, error)
	// Open opens the log of a stored session for appending; it fails with
	// ErrNotFound when there is none.
	Open(ctx context.Context, key Key) (Log, error)
	// Load returns every record of a stored session in append order.
	// Records a crash left damaged are skipped and described in warnings.
	Load(ctx context.Context, key Key) (records []json.RawMessage, warnings []string, err error)
	// List describes the sessions of workDir, most recently changed first.
	List(ctx context.Context, workDir string) ([]Info, error)
}

// Log is the open log of one session. Append and Close may be called from
// several goroutines.
type Log interface {
	// Append adds records at the end of the log, in order, all or none of
	// them. When it returns nil they survive a crash of the process.
	Append(ctx context.Context, records ...json.RawMessage) error
	// Close releases the log; later Appends fail.
	Close() error
}

// Info describes a stored session.
type Info struct {
	ID       string
	Modified time.Time
	// Size is the stored size in bytes (an estimate for stores that do
	// not keep bytes).
	Size int64
	// Head holds the session's first records (at least its first eight,
	// when it has them), from which the agent reads its metadata and
	// title without loading the whole session.
	Head []json.RawMessage
	// Owner is the node running the session's agent in cluster mode (the
	// holder of its lease, see store/pgstore); empty for stores of one
	// machine, and when no node holds the session.
	Owner string
}
