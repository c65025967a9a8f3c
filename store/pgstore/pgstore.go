// Package pgstore keeps sessions in PostgreSQL: an implementation of
// store.Store for sluice nodes that share their sessions (issue 15's
// cluster mode), where the JSONL files of one machine do not reach.
//
// Each session is a row of the sessions table and its log the rows of the
// records table, in append order. An Append is one transaction: it locks the
// session's row (so two logs open on one session append in turn, never
// interleaving a batch), inserts its records after the last and commits, so
// it is all or none and, with PostgreSQL's default synchronous_commit,
// durable when it returns.
//
// For cluster mode the store also keeps each session's lease (which node
// runs its agent, fenced by an epoch) and its latest checkpoint (a snapshot
// and the seq it holds up to): see AcquireLease and SaveCheckpoint in
// lease.go, and the retention rule there.
//
// The schema is the SQL files under migrations/, embedded and applied in
// order by Migrate (Open calls it), each recorded in schema_migrations.
package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/store"
)

// headRecords is how many first records List returns per session: the
// agent reads a session's metadata and title from them.
const headRecords = 8

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	// renew is the lease renewals' own pool: on the shared one they
	// queued behind every session's record appends (a node streaming
	// 1,000 sessions keeps ~1,000 appends waiting for its few
	// connections), and leases expired while they waited.
	renew *pgxpool.Pool
	// clockOffset moves the clock leases are judged by; only this
	// package's tests set it, to let a lease's TTL pass without waiting.
	clockOffset time.Duration
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by dsn (a PostgreSQL connection
// string or URL), brings its schema up to date and returns the store.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	cfg := pool.Config()
	cfg.MaxConns, cfg.MinConns = RenewConns, 0
	renew, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return &Store{pool: pool, renew: renew}, nil
}

// RenewConns is how many connections the store keeps for renewing leases
// (RenewLease, RenewLeases), apart from those of everything else: as many
// renewal statements as a node has in flight at once.
const RenewConns = 4

// Close closes the store's connections; logs opened from it fail after.
func (s *Store) Close() {
	s.pool.Close()
	s.renew.Close()
}

// key is a store.Key as the tables hold it: the working directory made
// absolute, as the JSONL store does, so that "." and its path name one
// project.
func key(k store.Key) (cwd, id string, err error) {
	if k.ID == "" {
		return "", "", errors.New("pgstore: empty session id")
	}
	cwd, err = filepath.Abs(k.WorkDir)
	if err != nil {
		cwd = k.WorkDir
	}
	return cwd, k.ID, nil
}

// Create adds the row of a new session.
func (s *Store) Create(ctx context.Context, k store.Key) (store.Log, error) {
	cwd, id, err := key(k)
	if err != nil {
		return nil, err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (cwd, id) VALUES ($1, $2)`, cwd, id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return nil, fmt.Errorf("pgstore: %w: %s", store.ErrExists, id)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: create session: %w", err)
	}
	return &log{pool: s.pool, cwd: cwd, id: id}, nil
}

// Open returns the log of a stored session.
func (s *Store) Open(ctx context.Context, k store.Key) (store.Log, error) {
	cwd, id, err := key(k)
	if err != nil {
		return nil, err
	}
	if err := s.exists(ctx, s.pool, cwd, id); err != nil {
		return nil, err
	}
	return &log{pool: s.pool, cwd: cwd, id: id}, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) exists(ctx context.Context, q querier, cwd, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM sessions WHERE cwd = $1 AND id = $2`, cwd, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: %w: %s", store.ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// Load returns a session's records in append order. PostgreSQL validated
// each record as JSON when it was appended, so there are never warnings.
func (s *Store) Load(ctx context.Context, k store.Key) ([]json.RawMessage, []string, error) {
	cwd, id, err := key(k)
	if err != nil {
		return nil, nil, err
	}
	// One repeatable-read snapshot: the session's existence and its
	// records as of one moment, even while another node appends.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only: nothing to undo
	if err := s.exists(ctx, tx, cwd, id); err != nil {
		return nil, nil, err
	}
	rows, err := tx.Query(ctx, `SELECT data::text FROM records WHERE cwd = $1 AND id = $2 ORDER BY seq`, cwd, id)
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: load %s: %w", id, err)
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (json.RawMessage, error) {
		var b []byte
		err := r.Scan(&b)
		return json.RawMessage(b), err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: load %s: %w", id, err)
	}
	return recs, nil, nil
}

// List describes the sessions of workDir, most recently changed first, each
// with its first records and the node holding its unexpired lease.
func (s *Store) List(ctx context.Context, workDir string) ([]store.Info, error) {
	cwd, err := filepath.Abs(workDir)
	if err != nil {
		cwd = workDir
	}
	rows, err := s.pool.Query(ctx, `
		SELECT s.id, s.modified_at, s.size, coalesce(l.node, ''),
			array(SELECT r.data::text FROM records r
				WHERE r.cwd = s.cwd AND r.id = s.id ORDER BY r.seq LIMIT $3)
		FROM sessions s
		LEFT JOIN leases l ON l.session = s.id AND l.node <> '' AND l.expires_at > `+clock+`
		WHERE s.cwd = $2
		ORDER BY s.modified_at DESC, s.id`, s.offset(), cwd, headRecords)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list: %w", err)
	}
	infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Info, error) {
		var in store.Info
		var head []string
		if err := r.Scan(&in.ID, &in.Modified, &in.Size, &in.Owner, &head); err != nil {
			return in, err
		}
		for _, h := range head {
			in.Head = append(in.Head, json.RawMessage(h))
		}
		return in, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list: %w", err)
	}
	return infos, nil
}

// log is the open log of one session. It holds no connection of its own:
// each Append takes one from the pool, so idle sessions cost nothing.
type log struct {
	pool    *pgxpool.Pool
	cwd, id string
	// lease, when set, fences the appends (see Fenced).
	lease *Lease

	mu     sync.Mutex
	closed bool
	// count is the session's number of records after this log's last
	// append (known once one succeeded).
	count int64
	known bool
	// doubt is the batch of an append that failed without an answer from
	// the server (the connection broke, the server stopped): it may have
	// been committed. The next append checks before it writes the batch
	// again, so that a retry does not store it twice.
	doubt []json.RawMessage
	// lostAck makes the next append that commits fail as a lost answer
	// would (tests).
	lostAck bool
}

// Append inserts records after the session's last in one transaction.
func (l *log) Append(ctx context.Context, records ...json.RawMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("pgstore: append to a closed session log")
	}
	if len(records) == 0 {
		return nil
	}
	if l.doubt != nil {
		landed, err := l.landed(ctx)
		if err != nil {
			return err
		}
		if landed && len(records) >= len(l.doubt) && sameRecords(records[:len(l.doubt)], l.doubt) {
			records = records[len(l.doubt):]
		}
		l.doubt = nil
		if len(records) == 0 {
			return nil
		}
	}
	data := make([]string, len(records))
	var size int64
	for i, r := range records {
		data[i] = string(r)
		size += int64(len(r)) + 1 // as a JSON Lines file would hold it
	}
	// One statement, so one round trip (a transaction of its own): the
	// streaming agent appends every 50 ms, and a BEGIN, SELECT … FOR
	// UPDATE, INSERT, UPDATE, COMMIT took five, each a wake-up on both
	// sides. The UPDATE's row lock orders appends to one session from any
	// node as the SELECT … FOR UPDATE did: a concurrent append waits for
	// it, then reads the count it left.
	fence, args := "", []any{l.cwd, l.id, int64(len(records)), size, data, int64(0)}
	if l.lease != nil {
		fence = ` AND EXISTS (SELECT 1 FROM leases WHERE session = $2 AND node = $7 AND epoch = $6 FOR SHARE)`
		args = append(args[:5], l.lease.Epoch, l.lease.Node)
	}
	// The records' statement runs whether or not the answer reads it.
	var last int64
	err := l.pool.QueryRow(ctx, `
		WITH s AS (
			UPDATE sessions SET records = records + $3, size = size + $4, modified_at = clock_timestamp()
			WHERE cwd = $1 AND id = $2`+fence+`
			RETURNING records - $3 AS last),
		r AS (
			INSERT INTO records (cwd, id, seq, data, epoch)
			SELECT $1, $2, s.last + u.n, u.d::json, $6
			FROM s, unnest($5::text[]) WITH ORDINALITY AS u(d, n))
		SELECT last FROM s`, args...).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: %s", store.ErrNotFound, l.id)
		if l.lease != nil {
			err = fmt.Errorf("%w (or %w)", ErrLeaseLost, err)
		}
		return fmt.Errorf("pgstore: append to %s: %w", l.id, err)
	}
	if err == nil && l.lostAck {
		l.lostAck, err = false, errors.New("the connection broke before the answer (test)")
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			// No answer from the server: committed or not, the next
			// append finds out.
			l.doubt = slices.Clone(records)
		}
		return fmt.Errorf("pgstore: append to %s: %w", l.id, err)
	}
	l.count, l.known = last+int64(len(records)), true
	return nil
}

// landed reports whether the batch in doubt was committed: the session
// ends with exactly its records, after the count this log last saw (when
// it saw one).
func (l *log) landed(ctx context.Context) (bool, error) {
	var count int64
	if err := l.pool.QueryRow(ctx, `SELECT records FROM sessions WHERE cwd = $1 AND id = $2`, l.cwd, l.id).Scan(&count); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil // the append says what is wrong
		}
		return false, fmt.Errorf("pgstore: append to %s: %w", l.id, err)
	}
	n := int64(len(l.doubt))
	if count < n || (l.known && count != l.count+n) {
		return false, nil
	}
	rows, err := l.pool.Query(ctx, `SELECT data::text FROM records WHERE cwd = $1 AND id = $2 AND seq > $3 ORDER BY seq`, l.cwd, l.id, count-n)
	if err != nil {
		return false, fmt.Errorf("pgstore: append to %s: %w", l.id, err)
	}
	tail, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (json.RawMessage, error) {
		var b []byte
		err := r.Scan(&b)
		return json.RawMessage(b), err
	})
	if err != nil {
		return false, fmt.Errorf("pgstore: append to %s: %w", l.id, err)
	}
	return sameRecords(tail, l.doubt), nil
}

func sameRecords(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// Close marks the log closed; it holds nothing else to release.
func (l *log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}
