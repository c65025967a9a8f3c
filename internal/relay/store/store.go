// Package store keeps the relay's state in one SQLite file
// (modernc.org/sqlite, no cgo), or — in cluster mode — in PostgreSQL,
// shared by the relay nodes of one chat account (OpenPostgres): the outbox of messages not yet taken by the
// platform, the inbox of users' questions not yet answered, the inbound
// messages already seen (de-duplication), and small values such as the
// long-poll cursor, WeChat's context tokens and the Claude Code session of
// each chat.
//
// A question enters the inbox in the same transaction that marks its
// inbound message seen, and leaves it in the same transaction that puts
// its answer in the outbox: whenever the process dies, a question seen is
// either answered in the outbox or still in the inbox — never neither.
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
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// ErrNotFound is returned by Get for a key that has no value.
var ErrNotFound = errors.New("store: not found")

// ErrFenced is returned by a write of a PostgreSQL store whose node does
// not hold the channel's lease (never had it, or lost it).
var ErrFenced = errors.New("store: this node does not hold the channel's lease")

// Store is an open state file, or a relay account's state in PostgreSQL.
type Store struct {
	db *sql.DB
	// pool is the PostgreSQL connection pool under db; nil for SQLite.
	pool *pgxpool.Pool
	// prefix starts the channel and key values of this store's rows (the
	// account, in PostgreSQL; "" in a file of its own).
	prefix string

	mu    sync.Mutex
	lease Lease // the fence of PostgreSQL writes; zero: none held
}

// Lease names the channel lease a PostgreSQL store's writes are fenced
// by: the row of the leases table (store/pgstore) with this key, node and
// epoch.
type Lease struct {
	Key, Node string
	Epoch     int64
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
CREATE TABLE IF NOT EXISTS inbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	channel    TEXT NOT NULL,
	chat       TEXT NOT NULL,
	text       TEXT NOT NULL,
	started    INTEGER NOT NULL DEFAULT 0,
	created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_channel ON inbox(channel, id);
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

// Schema is the PostgreSQL schema of the relay's tables (created by
// store/pgstore's migrations).
const Schema = "sluice_relay"

// OpenPostgres opens the state of relay account (for instance
// "telegram/123456") in the PostgreSQL database named by dsn, whose schema
// store/pgstore's Open has brought up to date. Its writes fail with
// ErrFenced until Fence names a lease this node holds.
func OpenPostgres(ctx context.Context, dsn, account string) (*Store, error) {
	if account == "" || strings.Contains(account, "|") {
		return nil, fmt.Errorf("store: account %q is empty or holds '|'", account)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN may hold a password: pgx's error does not repeat it.
		return nil, fmt.Errorf("store: %w", err)
	}
	// The relay's tables first, then what the connection string says (the
	// leases table is where store/pgstore made it).
	path := cfg.ConnConfig.RuntimeParams["search_path"]
	if path == "" {
		path = `"$user", public`
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = Schema + ", " + path
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, Schema).Scan(&n); err != nil || n == 0 {
		db.Close()
		pool.Close()
		if err == nil {
			err = fmt.Errorf("schema %s is missing (store/pgstore's migrations create it)", Schema)
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{db: db, pool: pool, prefix: account + "|"}, nil
}

// Fence makes l the lease this store's writes are fenced by (PostgreSQL
// only; the zero Lease fences every write out).
func (s *Store) Fence(l Lease) {
	s.mu.Lock()
	s.lease = l
	s.mu.Unlock()
}

// Close closes the file or the connections.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// q is a statement in the store's SQL: its ? placeholders become $1, $2…
// for PostgreSQL (no statement here holds a literal '?').
func (s *Store) q(query string) string {
	if s.pool == nil {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ch is a channel name or a key as this store's rows hold it.
func (s *Store) ch(name string) string { return s.prefix + name }

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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for i, it := range out {
			err := tx.QueryRowContext(ctx,
				s.q(`INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES(?, ?, ?, ?, ?) RETURNING id`),
				s.ch(it.Channel), it.Chat, it.Kind, it.Text, it.Created.UnixMilli()).Scan(&out[i].ID)
			if err != nil {
				return err
			}
		}
		if question != 0 {
			_, err := tx.ExecContext(ctx, s.q(`DELETE FROM inbox WHERE id = ?`), question)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", err)
	}
	return out, nil
}

// tx runs f in a transaction, committed when f returns nil. In
// PostgreSQL it first checks the fence, holding the lease's row (FOR
// SHARE) until the commit: a takeover of the lease waits for it, and a
// transaction after the takeover finds the row changed.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if s.pool != nil {
		s.mu.Lock()
		l := s.lease
		s.mu.Unlock()
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM leases WHERE session = $1 AND node = $2 AND epoch = $3 FOR SHARE`,
			l.Key, l.Node, l.Epoch).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			err = ErrFenced
		}
		if err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
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
	fresh := true
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if key != "" {
			res, err := tx.ExecContext(ctx,
				s.q(`INSERT INTO seen(channel, key, at_ms) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`), s.ch(q.Channel), key, q.Created.UnixMilli())
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if fresh = n == 1; !fresh {
				return nil
			}
		}
		return tx.QueryRowContext(ctx,
			s.q(`INSERT INTO inbox(channel, chat, text, created_ms) VALUES(?, ?, ?, ?) RETURNING id`),
			s.ch(q.Channel), q.Chat, q.Text, q.Created.UnixMilli()).Scan(&q.ID)
	})
	if err != nil {
		return Question{}, false, fmt.Errorf("store: ask: %w", err)
	}
	return q, fresh, nil
}

// Questions returns the inbox of a channel, oldest first.
func (s *Store) Questions(ctx context.Context, channel string) ([]Question, error) {
	rows, err := s.db.QueryContext(ctx,
		s.q(`SELECT id, chat, text, started, created_ms FROM inbox WHERE channel = ? ORDER BY id`), s.ch(channel))
	if err != nil {
		return nil, fmt.Errorf("store: questions: %w", err)
	}
	defer rows.Close()
	var qs []Question
	for rows.Next() {
		q := Question{Channel: channel}
		var ms int64
		var started int
		if err := rows.Scan(&q.ID, &q.Chat, &q.Text, &started, &ms); err != nil {
			return nil, fmt.Errorf("store: questions: %w", err)
		}
		q.Started, q.Created = started != 0, time.UnixMilli(ms)
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: questions: %w", err)
	}
	return qs, nil
}

// Start marks a question as being answered.
func (s *Store) Start(ctx context.Context, id int64) error {
	if err := s.exec(ctx, `UPDATE inbox SET started = 1 WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: start: %w", err)
	}
	return nil
}

// Drop removes questions from the inbox unanswered (the user withdrew
// them: /stop, /new).
func (s *Store) Drop(ctx context.Context, ids ...int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM inbox WHERE id = ?`), id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: drop: %w", err)
	}
	return nil
}

// Pending returns the outbox of a channel, oldest first.
func (s *Store) Pending(ctx context.Context, channel string) ([]Item, error) {
	rows, err := s.db.QueryContext(ctx,
		s.q(`SELECT id, chat, kind, text, created_ms FROM outbox WHERE channel = ? ORDER BY id`), s.ch(channel))
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
	if err := s.exec(ctx, `DELETE FROM outbox WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: delivered: %w", err)
	}
	return nil
}

// Claim records an inbound message key of a channel and reports whether it
// is new: false means it was seen before and must not be handled again.
func (s *Store) Claim(ctx context.Context, channel, key string, at time.Time) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			s.q(`INSERT INTO seen(channel, key, at_ms) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`), s.ch(channel), key, at.UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: claim: %w", err)
	}
	return n == 1, nil
}

// Forget drops the inbound keys of this store's channels recorded before t.
func (s *Store) Forget(ctx context.Context, before time.Time) error {
	// The prefix holds no LIKE wildcard that matters: '|' ends it, and a
	// '_' or '%' in it only widens the match to keys of the same age.
	if err := s.exec(ctx, `DELETE FROM seen WHERE at_ms < ? AND channel LIKE ?`, before.UnixMilli(), s.prefix+"%"); err != nil {
		return fmt.Errorf("store: forget: %w", err)
	}
	return nil
}

// Get returns the value of key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM kv WHERE key = ?`), s.ch(key)).Scan(&v)
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
		err = s.exec(ctx, `DELETE FROM kv WHERE key = ?`, s.ch(key))
	} else {
		err = s.exec(ctx,
			`INSERT INTO kv(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, s.ch(key), value)
	}
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return nil
}

// exec runs one write statement (in a fenced transaction in PostgreSQL).
func (s *Store) exec(ctx context.Context, query string, args ...any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(query), args...)
		return err
	})
}
