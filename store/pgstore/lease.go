package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/store"
)

// Cluster mode (issue 15) runs each session's agent on one node at a time.
// The node holds the session's lease: a row of the leases table naming the
// node, with an epoch that grows by one each time the lease changes hands
// and an expiry the node keeps pushing forward by renewing it. A node that
// stops renewing (it died, or lost the database) loses the lease when it
// expires, and another node may take it with the next epoch.
//
// Every change is one SQL statement that compares and sets the row, so two
// nodes racing for a lease cannot both win, and expiry is judged by the
// database's clock (now()), so the nodes' clocks do not matter.
//
// The epoch fences a node that lost its lease without noticing (it was
// paused longer than the TTL): SaveCheckpoint succeeds only under the
// current epoch, and the JetStream log fences its publishing the same way.
//
// Retention: a checkpoint holds the session's state up to and including
// its seq, so the session's events with a seq at or below the latest
// checkpoint's can be removed from the event stream; a node rebuilds a
// session from the checkpoint plus the events after it. A client resuming
// from a lastSeq older than the checkpoint is given the snapshot, not the
// events it missed.

// Lease is a node's hold on one session: Node runs the session's agent
// until Expires (by the database's clock) unless it renews the lease.
// Epoch identifies this holding: it is 1 for a session's first lease and
// grows by one with each new holder, never going back.
type Lease struct {
	Session, Node string
	Epoch         int64
	Expires       time.Time
}

var (
	// ErrLeaseHeld is returned by AcquireLease when another node holds an
	// unexpired lease on the session.
	ErrLeaseHeld = errors.New("pgstore: the session's lease is held by another node")
	// ErrLeaseLost means the lease is no longer the caller's: it was
	// released, or it expired and another node took it (the epoch moved
	// on). The node must stop running the session.
	ErrLeaseLost = errors.New("pgstore: the session's lease was lost")
)

// clock is the SQL for the time leases are judged by: the database's now()
// moved by the Store's clock offset (always 0 outside this package's
// tests), given as the statement's first parameter in microseconds.
const clock = `(now() + $1 * interval '1 microsecond')`

func (s *Store) offset() int64 { return s.clockOffset.Microseconds() }

func checkLease(session, node string, ttl time.Duration) error {
	switch {
	case session == "":
		return errors.New("pgstore: lease: empty session id")
	case node == "":
		return errors.New("pgstore: lease: empty node id")
	case ttl < time.Microsecond:
		return fmt.Errorf("pgstore: lease: TTL %v is not positive", ttl)
	}
	return nil
}

// AcquireLease makes node the holder of session's lease for ttl. It takes
// a lease that is free (never taken, released or expired) with the next
// epoch. If node already holds the unexpired lease, it is renewed with the
// same epoch, so a node may call AcquireLease before each command without
// tracking whether it already runs the session. If another node holds an
// unexpired lease the error is ErrLeaseHeld and the Lease returned is the
// holder's as read just after (zero if that lease ended meanwhile: the
// caller may try again).
func (s *Store) AcquireLease(ctx context.Context, session, node string, ttl time.Duration) (Lease, error) {
	if err := checkLease(session, node, ttl); err != nil {
		return Lease{}, err
	}
	// excluded.renewed_at is the statement's clock: the new row's, or, on a
	// conflict, the time the existing row is judged against. In SET every
	// l.* is the row as it was.
	l, err := s.scanLease(ctx, `
		INSERT INTO leases AS l (session, node, epoch, expires_at, acquired_at, renewed_at)
		SELECT $2, $3, 1, c.t + $4 * interval '1 microsecond', c.t, c.t
		FROM (SELECT `+clock+` AS t) c
		ON CONFLICT (session) DO UPDATE SET
			epoch = CASE WHEN l.node = excluded.node AND l.expires_at > excluded.renewed_at
				THEN l.epoch ELSE l.epoch + 1 END,
			acquired_at = CASE WHEN l.node = excluded.node AND l.expires_at > excluded.renewed_at
				THEN l.acquired_at ELSE excluded.acquired_at END,
			node = excluded.node,
			expires_at = excluded.expires_at,
			renewed_at = excluded.renewed_at
		WHERE l.node = excluded.node OR l.node = '' OR l.expires_at <= excluded.renewed_at
		RETURNING l.session, l.node, l.epoch, l.expires_at`,
		s.offset(), session, node, ttl.Microseconds())
	if errors.Is(err, pgx.ErrNoRows) {
		holder, err := s.Owner(ctx, session)
		if err != nil {
			return Lease{}, err
		}
		return holder, ErrLeaseHeld
	}
	if err != nil {
		return Lease{}, fmt.Errorf("pgstore: acquire lease on %s: %w", session, err)
	}
	return l, nil
}

// RenewLease extends l to ttl from now and returns it with its new expiry.
// It succeeds as long as l is still the session's lease, even if it
// expired, when no other node took it meanwhile; otherwise the error is
// ErrLeaseLost. A node renews well within the TTL (say every third of it)
// so that a slow round trip does not lose the lease.
func (s *Store) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkLease(l.Session, l.Node, ttl); err != nil {
		return Lease{}, err
	}
	var renewed Lease
	err := s.renew.QueryRow(ctx, `
		UPDATE leases SET expires_at = c.t + $5 * interval '1 microsecond', renewed_at = c.t
		FROM (SELECT `+clock+` AS t) c
		WHERE session = $2 AND node = $3 AND epoch = $4
		RETURNING session, node, epoch, expires_at`,
		s.offset(), l.Session, l.Node, l.Epoch, ttl.Microseconds()).Scan(&renewed.Session, &renewed.Node, &renewed.Epoch, &renewed.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, ErrLeaseLost
	}
	if err != nil {
		return Lease{}, fmt.Errorf("pgstore: renew lease on %s: %w", l.Session, err)
	}
	return renewed, nil
}

// RenewLeases renews many leases in one statement, as RenewLease renews
// one: each is extended to ttl from now if it is still the session's lease
// (same node and epoch), and returned with its new expiry. A lease missing
// from the result was lost (ErrLeaseLost for RenewLease). A node renews
// all its sessions' leases this way: one round trip per period rather than
// one per session, which at thousands of sessions outlasts the TTL. Both
// renew on connections of their own (RenewConns), never waiting for one
// behind the sessions' record appends.
func (s *Store) RenewLeases(ctx context.Context, ls []Lease, ttl time.Duration) ([]Lease, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	sessions, nodes, epochs := make([]string, len(ls)), make([]string, len(ls)), make([]int64, len(ls))
	for i, l := range ls {
		if err := checkLease(l.Session, l.Node, ttl); err != nil {
			return nil, err
		}
		sessions[i], nodes[i], epochs[i] = l.Session, l.Node, l.Epoch
	}
	rows, err := s.renew.Query(ctx, `
		UPDATE leases AS l SET expires_at = c.t + $5 * interval '1 microsecond', renewed_at = c.t
		FROM (SELECT `+clock+` AS t) c, unnest($2::text[], $3::text[], $4::bigint[]) AS u(session, node, epoch)
		WHERE l.session = u.session AND l.node = u.node AND l.epoch = u.epoch
		RETURNING l.session, l.node, l.epoch, l.expires_at`,
		s.offset(), sessions, nodes, epochs, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("pgstore: renew %d leases: %w", len(ls), err)
	}
	renewed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var l Lease
		err := r.Scan(&l.Session, &l.Node, &l.Epoch, &l.Expires)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: renew %d leases: %w", len(ls), err)
	}
	return renewed, nil
}

// ReleaseLease gives l up, so that another node may take the session at
// once instead of after the TTL. The session keeps its epoch: the next
// holder gets the one after. If l was no longer the session's lease the
// error is ErrLeaseLost (a node shutting down can ignore it).
func (s *Store) ReleaseLease(ctx context.Context, l Lease) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE leases SET node = '', expires_at = c.t, renewed_at = c.t
		FROM (SELECT `+clock+` AS t) c
		WHERE session = $2 AND node = $3 AND epoch = $4`,
		s.offset(), l.Session, l.Node, l.Epoch)
	if err != nil {
		return fmt.Errorf("pgstore: release lease on %s: %w", l.Session, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Owner returns the unexpired lease on session, or the zero Lease if no
// node holds one.
func (s *Store) Owner(ctx context.Context, session string) (Lease, error) {
	l, err := s.scanLease(ctx, `
		SELECT session, node, epoch, expires_at FROM leases
		WHERE session = $2 AND node <> '' AND expires_at > `+clock,
		s.offset(), session)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, nil
	}
	if err != nil {
		return Lease{}, fmt.Errorf("pgstore: owner of %s: %w", session, err)
	}
	return l, nil
}

func (s *Store) scanLease(ctx context.Context, sql string, args ...any) (Lease, error) {
	var l Lease
	err := s.pool.QueryRow(ctx, sql, args...).Scan(&l.Session, &l.Node, &l.Epoch, &l.Expires)
	return l, err
}

// SaveCheckpoint stores snapshot as the session's state up to and
// including event seq. It is fenced by the lease: unless l is the
// session's current lease (same node and epoch; expired is fine while no
// other node took it) nothing is stored and the error is ErrLeaseLost. The
// statement holds the lease row while it writes, so a node taking the
// lease over waits for it and then loads this checkpoint, never an older
// one, and no checkpoint of the old holder lands after the takeover.
//
// A checkpoint never moves seq backwards: one with a seq below the stored
// checkpoint's (a late periodic checkpoint after the end-of-run one) is
// dropped and SaveCheckpoint returns nil; an equal seq replaces it.
// Events at or below seq may then be removed from the event stream (see
// the retention rule above).
func (s *Store) SaveCheckpoint(ctx context.Context, l Lease, snapshot json.RawMessage, seq int64) error {
	if seq < 0 {
		return fmt.Errorf("pgstore: checkpoint of %s: negative seq %d", l.Session, seq)
	}
	if len(snapshot) == 0 {
		return fmt.Errorf("pgstore: checkpoint of %s: empty snapshot", l.Session)
	}
	// FOR SHARE: concurrent checkpoints of one holder do not wait on each
	// other, but a takeover (which updates the row) waits for them, and a
	// checkpoint started after a takeover committed rereads the row and
	// finds the epoch gone.
	var fenced bool
	err := s.pool.QueryRow(ctx, `
		WITH l AS (
			SELECT epoch FROM leases
			WHERE session = $1 AND node = $2 AND epoch = $3
			FOR SHARE
		), saved AS (
			INSERT INTO checkpoints AS c (session, seq, epoch, snapshot, saved_at)
			SELECT $1, $4, l.epoch, $5::text::json, now() FROM l
			ON CONFLICT (session) DO UPDATE SET
				seq = excluded.seq, epoch = excluded.epoch,
				snapshot = excluded.snapshot, saved_at = excluded.saved_at
			WHERE c.seq <= excluded.seq
		)
		SELECT NOT EXISTS (SELECT 1 FROM l)`,
		l.Session, l.Node, l.Epoch, seq, string(snapshot)).Scan(&fenced)
	if err != nil {
		return fmt.Errorf("pgstore: checkpoint of %s: %w", l.Session, err)
	}
	if fenced {
		return ErrLeaseLost
	}
	return nil
}

// LoadCheckpoint returns the session's latest checkpoint: its snapshot
// and the seq of the last event it holds; a nil snapshot and seq 0 when it
// has none.
func (s *Store) LoadCheckpoint(ctx context.Context, session string) (json.RawMessage, int64, error) {
	var snap []byte
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT snapshot::text, seq FROM checkpoints WHERE session = $1`, session).Scan(&snap, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("pgstore: load checkpoint of %s: %w", session, err)
	}
	return json.RawMessage(snap), seq, nil
}

// Unheld returns those of sessions on which no node holds an unexpired
// lease: a node looking for orphans asks once for all the running sessions
// it sees, rather than once per session.
func (s *Store) Unheld(ctx context.Context, sessions []string) ([]string, error) {
	if len(sessions) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT u.s FROM unnest($2::text[]) AS u(s)
		WHERE NOT EXISTS (SELECT 1 FROM leases
			WHERE session = u.s AND node <> '' AND expires_at > `+clock+`)`,
		s.offset(), sessions)
	if err != nil {
		return nil, fmt.Errorf("pgstore: unheld sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: unheld sessions: %w", err)
	}
	return out, nil
}

// Fenced returns the store as the holder of lease l sees it: the logs it
// creates and opens append only while l is the session's lease (expired is
// fine while no other node took it), under the same row lock as
// SaveCheckpoint, so that a node that lost the lease without noticing
// (paused past its TTL) cannot write a record after a takeover. An append
// fenced out fails with ErrLeaseLost.
func (s *Store) Fenced(l Lease) store.Store { return fencedStore{s, l} }

type fencedStore struct {
	*Store
	lease Lease
}

func (f fencedStore) Create(ctx context.Context, k store.Key) (store.Log, error) {
	lg, err := f.Store.Create(ctx, k)
	if err != nil {
		return nil, err
	}
	lg.(*log).lease = &f.lease
	return lg, nil
}

func (f fencedStore) Open(ctx context.Context, k store.Key) (store.Log, error) {
	lg, err := f.Store.Open(ctx, k)
	if err != nil {
		return nil, err
	}
	lg.(*log).lease = &f.lease
	return lg, nil
}
