package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Schema is the PostgreSQL schema of the relay's tables (created by
// store/pgstore's migrations).
const Schema = "sluice_relay"

// pgBackend is a relay account's state in the tables of Schema, shared
// with the other accounts of the database: its rows' channel and key
// values start with the account's prefix.
type pgBackend struct {
	db   *sql.DB
	pool *pgxpool.Pool // under db
	// prefix starts the channel and key values of this account's rows.
	prefix string

	mu    sync.Mutex
	lease Lease // the fence of writes; zero: none held
}

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
	return &Store{b: &pgBackend{db: db, pool: pool, prefix: account + "|"}}, nil
}

func (p *pgBackend) fence(l Lease) {
	p.mu.Lock()
	p.lease = l
	p.mu.Unlock()
}

func (p *pgBackend) close() error {
	err := p.db.Close()
	p.pool.Close()
	return err
}

// ch is a channel name or a key as this account's rows hold it.
func (p *pgBackend) ch(name string) string { return p.prefix + name }

// tx runs f in a transaction, committed when f returns nil. It first
// checks the fence, holding the lease's row (FOR SHARE) until the commit:
// a takeover of the lease waits for it, and a transaction after the
// takeover finds the row changed.
func (p *pgBackend) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	p.mu.Lock()
	l := p.lease
	p.mu.Unlock()
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM leases WHERE session = $1 AND node = $2 AND epoch = $3 FOR SHARE`,
		l.Key, l.Node, l.Epoch).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrFenced
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// exec runs one write statement in a fenced transaction.
func (p *pgBackend) exec(ctx context.Context, query string, args ...any) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

func (p *pgBackend) answer(ctx context.Context, items []Item, question int64) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		for i, it := range items {
			err := tx.QueryRowContext(ctx,
				`INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES($1, $2, $3, $4, $5) RETURNING id`,
				p.ch(it.Channel), it.Chat, it.Kind, it.Text, it.Created.UnixMilli()).Scan(&items[i].ID)
			if err != nil {
				return err
			}
		}
		if question != 0 {
			_, err := tx.ExecContext(ctx, `DELETE FROM inbox WHERE id = $1`, question)
			return err
		}
		return nil
	})
}

func (p *pgBackend) ask(ctx context.Context, key string, q *Question) (bool, error) {
	fresh := true
	err := p.tx(ctx, func(tx *sql.Tx) error {
		if key != "" {
			var err error
			if fresh, err = p.claimIn(ctx, tx, q.Channel, key, q.Created); err != nil || !fresh {
				return err
			}
		}
		return tx.QueryRowContext(ctx,
			`INSERT INTO inbox(channel, chat, text, created_ms) VALUES($1, $2, $3, $4) RETURNING id`,
			p.ch(q.Channel), q.Chat, q.Text, q.Created.UnixMilli()).Scan(&q.ID)
	})
	return fresh, err
}

// claimIn records key as seen in tx and reports whether it is new.
func (p *pgBackend) claimIn(ctx context.Context, tx *sql.Tx, channel, key string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO seen(channel, key, at_ms) VALUES($1, $2, $3) ON CONFLICT DO NOTHING`, p.ch(channel), key, at.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (p *pgBackend) questions(ctx context.Context, channel string) ([]Question, error) {
	rows, err := p.db.QueryContext(ctx,
		`SELECT id, chat, text, started, created_ms FROM inbox WHERE channel = $1 ORDER BY id`, p.ch(channel))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var qs []Question
	for rows.Next() {
		q := Question{Channel: channel}
		var ms int64
		var started int
		if err := rows.Scan(&q.ID, &q.Chat, &q.Text, &started, &ms); err != nil {
			return nil, err
		}
		q.Started, q.Created = started != 0, time.UnixMilli(ms)
		qs = append(qs, q)
	}
	return qs, rows.Err()
}

func (p *pgBackend) start(ctx context.Context, id int64) error {
	return p.exec(ctx, `UPDATE inbox SET started = 1 WHERE id = $1`, id)
}

func (p *pgBackend) drop(ctx context.Context, ids []int64) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM inbox WHERE id = $1`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

func (p *pgBackend) pending(ctx context.Context, channel string) ([]Item, error) {
	rows, err := p.db.QueryContext(ctx,
		`SELECT id, chat, kind, text, created_ms FROM outbox WHERE channel = $1 ORDER BY id`, p.ch(channel))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []Item
	for rows.Next() {
		it := Item{Channel: channel}
		var ms int64
		if err := rows.Scan(&it.ID, &it.Chat, &it.Kind, &it.Text, &ms); err != nil {
			return nil, err
		}
		it.Created = time.UnixMilli(ms)
		items = append(items, it)
	}
	return items, rows.Err()
}

func (p *pgBackend) delivered(ctx context.Context, id int64) error {
	return p.exec(ctx, `DELETE FROM outbox WHERE id = $1`, id)
}

func (p *pgBackend) claim(ctx context.Context, channel, key string, at time.Time) (bool, error) {
	var fresh bool
	err := p.tx(ctx, func(tx *sql.Tx) error {
		var err error
		fresh, err = p.claimIn(ctx, tx, channel, key, at)
		return err
	})
	return fresh, err
}

func (p *pgBackend) forget(ctx context.Context, before time.Time) error {
	// The prefix holds no LIKE wildcard that matters: '|' ends it, and a
	// '_' or '%' in it only widens the match to keys of the same age.
	return p.exec(ctx, `DELETE FROM seen WHERE at_ms < $1 AND channel LIKE $2`, before.UnixMilli(), p.prefix+"%")
}

func (p *pgBackend) get(ctx context.Context, key string) (string, error) {
	var v string
	err := p.db.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = $1`, p.ch(key)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return v, err
}

func (p *pgBackend) put(ctx context.Context, key, value string) error {
	if value == "" {
		return p.exec(ctx, `DELETE FROM kv WHERE key = $1`, p.ch(key))
	}
	return p.exec(ctx,
		`INSERT INTO kv(key, value) VALUES($1, $2) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, p.ch(key), value)
}
