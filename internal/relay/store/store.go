// Package store keeps the relay's state in one SQLite file
// (modernc.org/sqlite, no cgo): the outbox of messages not yet taken by the
// platform, the inbound messages already seen (de-duplication), and small
// values such as the long-poll cursor, WeChat's context tokens and the
// Claude Code session of each chat.
//
// Message text lives here until delivered; credentials never do (the
// channels keep them in their own 0600 file).
//
// A Store is safe for concurrent use. Close it once, after its users.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// ErrNotFound is returned by Get for a key that has no value.
var ErrNotFound = errors.New("store: not found")

// Store is an open state file.
type Store struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS outbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	channel    TEXT NOT NULL,
	chat       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	text       TEXT NOT NULL,
	created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_channel ON outbox(channel, id);
CREATE TABLE IF NOT EXISTS seen (
	channel TEXT NOT NULL,
	key     TEXT NOT NULL,
	at_ms   INTEGER NOT NULL,
	PRIMARY KEY (channel, key)
);
CREATE TABLE IF NOT EXISTS kv (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`

// Open opens (creating if needed) the state file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// One connection: SQLite serialises writers anyway, and one connection
	// keeps every statement's view consistent without retries.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: create schema in %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

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
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES(?, ?, ?, ?, ?)`,
		it.Channel, it.Chat, it.Kind, it.Text, it.Created.UnixMilli())
	if err != nil {
		return Item{}, fmt.Errorf("store: enqueue: %w", err)
	}
	it.ID, err = res.LastInsertId()
	if err != nil {
		return Item{}, fmt.Errorf("store: enqueue: %w", err)
	}
	return it, nil
}

// Pending returns the outbox of a channel, oldest first.
func (s *Store) Pending(ctx context.Context, channel string) ([]Item, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, chat, kind, text, created_ms FROM outbox WHERE channel = ? ORDER BY id`, channel)
	if err != nil {
		return nil, fmt.Errorf("store: pending: %w", err)
	}
	defer rows.Close()
	var items []Item
	for rows.Next() {
		it := Item{Channel: channel}
		var ms int64
		if err := rows.Scan(&it.ID, &it.Chat, &it.Kind, &it.Text, &ms); err != nil {
			return nil, fmt.Errorf("store: pending: %w", err)
		}
		it.Created = time.UnixMilli(ms)
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending: %w", err)
	}
	return items, nil
}

// Delivered removes a message from the outbox.
func (s *Store) Delivered(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM outbox WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: delivered: %w", err)
	}
	return nil
}

// Claim records an inbound message key of a channel and reports whether it
// is new: false means it was seen before and must not be handled again.
func (s *Store) Claim(ctx context.Context, channel, key string, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx,
		`INSERT OR IGNORE INTO seen(channel, key, at_ms) VALUES(?, ?, ?)`, channel, key, at.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("store: claim: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: claim: %w", err)
	}
	return n == 1, nil
}

// Forget drops the inbound keys recorded before t.
func (s *Store) Forget(ctx context.Context, before time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM seen WHERE at_ms < ?`, before.UnixMilli()); err != nil {
		return fmt.Errorf("store: forget: %w", err)
	}
	return nil
}

// Get returns the value of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: get %s: %w", key, err)
	}
	return v, nil
}

// Put sets the value of key; an empty value deletes it.
func (s *Store) Put(ctx context.Context, key, value string) error {
	var err error
	if value == "" {
		_, err = s.db.ExecContext(ctx, `DELETE FROM kv WHERE key = ?`, key)
	} else {
		_, err = s.db.ExecContext(ctx,
			`INSERT INTO kv(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	}
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return nil
}
