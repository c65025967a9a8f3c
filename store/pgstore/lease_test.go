package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

const ttl = 10 * time.Second

// leaseStep is one call in a lease scenario, made at a lease clock `at`
// ahead of the database's (pgstore.Later), so TTLs pass without waiting.
type leaseStep struct {
	at   time.Duration
	do   string // acquire, renew, release or owner
	node string
	// want is the error wanted; epoch the lease's epoch wanted (acquire,
	// renew; for owner, the owner's, 0 for none, and node the owner).
	want  error
	epoch int64
}

// TestLease walks a session's lease through takeovers, renewals, expiry
// and release. Each node renews and releases the lease it last obtained.
func TestLease(t *testing.T) {
	t.Parallel()
	st := open(t)
	cases := []struct {
		name  string
		steps []leaseStep
	}{
		{"first acquire is epoch 1", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{do: "owner", node: "a", epoch: 1},
		}},
		{"held by another node", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 9 * time.Second, do: "acquire", node: "b", want: pgstore.ErrLeaseHeld, epoch: 1},
			{at: 9 * time.Second, do: "owner", node: "a", epoch: 1},
		}},
		{"holder re-acquires: renewed, same epoch", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 5 * time.Second, do: "acquire", node: "a", epoch: 1},
			{at: 12 * time.Second, do: "owner", node: "a", epoch: 1},
			{at: 12 * time.Second, do: "acquire", node: "b", want: pgstore.ErrLeaseHeld, epoch: 1},
		}},
		{"expired: another node takes it with the next epoch", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 11 * time.Second, do: "acquire", node: "b", epoch: 2},
			{at: 11 * time.Second, do: "renew", node: "a", want: pgstore.ErrLeaseLost},
			{at: 11 * time.Second, do: "release", node: "a", want: pgstore.ErrLeaseLost},
			{at: 11 * time.Second, do: "owner", node: "b", epoch: 2},
		}},
		{"expired, not taken: the holder renews it, same epoch", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 11 * time.Second, do: "owner"},
			{at: 11 * time.Second, do: "renew", node: "a", epoch: 1},
			{at: 11 * time.Second, do: "acquire", node: "b", want: pgstore.ErrLeaseHeld, epoch: 1},
		}},
		{"expired: the holder re-acquiring starts a new epoch", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 11 * time.Second, do: "acquire", node: "a", epoch: 2},
		}},
		{"renewal pushes the expiry on", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{at: 8 * time.Second, do: "renew", node: "a", epoch: 1},
			{at: 15 * time.Second, do: "acquire", node: "b", want: pgstore.ErrLeaseHeld, epoch: 1},
			{at: 19 * time.Second, do: "acquire", node: "b", epoch: 2},
		}},
		{"release frees it at once, the epoch goes on", []leaseStep{
			{do: "acquire", node: "a", epoch: 1},
			{do: "release", node: "a"},
			{do: "owner"},
			{do: "renew", node: "a", want: pgstore.ErrLeaseLost},
			{do: "acquire", node: "b", epoch: 2},
			{do: "release", node: "b"},
			{do: "acquire", node: "a", epoch: 3},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			session := fmt.Sprintf("s%d", i)
			held := map[string]pgstore.Lease{}
			for j, s := range tc.steps {
				at := pgstore.Later(st, s.at)
				var l pgstore.Lease
				var err error
				switch s.do {
				case "acquire":
					l, err = at.AcquireLease(ctx, session, s.node, ttl)
					if err == nil {
						if prev, ok := held[s.node]; ok && prev.Epoch == l.Epoch && !l.Expires.After(prev.Expires) {
							t.Errorf("step %d: re-acquired lease expires %v, not after %v", j, l.Expires, prev.Expires)
						}
						held[s.node] = l
					}
				case "renew":
					prev := held[s.node]
					l, err = at.RenewLease(ctx, prev, ttl)
					if err == nil {
						if !l.Expires.After(prev.Expires) {
							t.Errorf("step %d: renewed lease expires %v, not after %v", j, l.Expires, prev.Expires)
						}
						held[s.node] = l
					}
				case "release":
					err = at.ReleaseLease(ctx, held[s.node])
				case "owner":
					l, err = at.Owner(ctx, session)
				}
				if !errors.Is(err, s.want) {
					t.Fatalf("step %d (%s %s at +%v): error %v, want %v", j, s.do, s.node, s.at, err, s.want)
				}
				if s.do == "release" {
					continue
				}
				switch {
				case s.want == pgstore.ErrLeaseLost:
					if l.Node != "" || l.Epoch != 0 {
						t.Errorf("step %d: lost lease comes with %+v", j, l)
					}
				case s.want == pgstore.ErrLeaseHeld:
					if l.Epoch != s.epoch || l.Node == s.node || l.Node == "" || l.Session != session {
						t.Errorf("step %d: holder %+v, want another node's at epoch %d", j, l, s.epoch)
					}
				case l.Epoch != s.epoch || l.Node != s.node || (s.epoch != 0 && l.Session != session):
					t.Errorf("step %d (%s): lease %+v, want node %q epoch %d", j, s.do, l, s.node, s.epoch)
				}
			}
		})
	}
}

func TestLeaseBadArguments(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, session, node string
		ttl                 time.Duration
	}{
		{"no session", "", "a", ttl},
		{"no node", "s", "", ttl},
		{"zero TTL", "s", "a", 0},
		{"negative TTL", "s", "a", -time.Second},
	} {
		if _, err := st.AcquireLease(ctx, tc.session, tc.node, tc.ttl); err == nil || errors.Is(err, pgstore.ErrLeaseHeld) {
			t.Errorf("%s: acquire error %v, want a bad argument", tc.name, err)
		}
	}
	if l, err := st.Owner(ctx, "s"); err != nil || l != (pgstore.Lease{}) {
		t.Errorf("after refused acquires: owner %+v, %v; want none", l, err)
	}
}

// TestLeaseRace: nodes racing for one session's lease, again each time it
// expires: exactly one wins each epoch, and the others are told who.
func TestLeaseRace(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	const nodes, rounds = 12, 3
	for round := range rounds {
		at := pgstore.Later(st, time.Duration(round)*2*ttl)
		start := make(chan struct{})
		type result struct {
			node  string
			lease pgstore.Lease
			err   error
		}
		results := make(chan result, nodes)
		var wg sync.WaitGroup
		for n := range nodes {
			node := fmt.Sprintf("node-%d", n)
			wg.Go(func() {
				<-start
				l, err := at.AcquireLease(ctx, "s", node, ttl)
				results <- result{node, l, err}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		var winners []result
		var held []result
		for r := range results {
			switch {
			case r.err == nil:
				winners = append(winners, r)
			case errors.Is(r.err, pgstore.ErrLeaseHeld):
				held = append(held, r)
			default:
				t.Fatalf("round %d: %s: %v", round, r.node, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners %+v, want 1", round, len(winners), winners)
		}
		w := winners[0].lease
		if w.Epoch != int64(round+1) || w.Node != winners[0].node {
			t.Errorf("round %d: winner %+v, want %s at epoch %d", round, w, winners[0].node, round+1)
		}
		for _, h := range held {
			if h.lease.Session != w.Session || h.lease.Node != w.Node || h.lease.Epoch != w.Epoch || !h.lease.Expires.Equal(w.Expires) {
				t.Errorf("round %d: %s was told the holder is %+v, want %+v", round, h.node, h.lease, w)
			}
		}
	}
}

// TestLeaseExpiresByDatabaseClock: with no clock offset, a short lease
// expires by the database's own clock and another node then takes it.
// The test polls for the takeover; the bound only limits how long a broken
// expiry is waited for.
func TestLeaseExpiresByDatabaseClock(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	a, err := st.AcquireLease(ctx, "s", "a", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var b pgstore.Lease
	for {
		b, err = st.AcquireLease(ctx, "s", "b", ttl)
		if err == nil {
			break
		}
		if !errors.Is(err, pgstore.ErrLeaseHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 50 ms lease still held after a minute: %+v", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b.Epoch != 2 {
		t.Errorf("taken over at epoch %d, want 2", b.Epoch)
	}
	if _, err := st.RenewLease(ctx, a, ttl); !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Errorf("renewing the taken lease: %v, want ErrLeaseLost", err)
	}
}

// TestCheckpoint: checkpoints are fenced by the lease's epoch and never
// move seq backwards; snapshots come back byte for byte.
func TestCheckpoint(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	type save struct {
		lease    string // a, b (the two epochs' leases), forged or released
		snapshot string
		seq      int64
		want     error // ErrLeaseLost, errBad (any other error) or nil
	}
	errBad := errors.New("a bad checkpoint")
	cases := []struct {
		name     string
		saves    []save
		wantSnap string
		wantSeq  int64
	}{
		{"none", nil, "", 0},
		{"saved as written", []save{
			{lease: "a", snapshot: `{"messages": [ {"role":"user"} ], "seq":5}`, seq: 5},
		}, `{"messages": [ {"role":"user"} ], "seq":5}`, 5},
		{"a later seq replaces it", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "a", snapshot: `{"n":9}`, seq: 9},
		}, `{"n":9}`, 9},
		{"an earlier seq is dropped", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "a", snapshot: `{"n":3}`, seq: 3},
		}, `{"n":5}`, 5},
		{"the same seq replaces it", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "a", snapshot: `{"n":"5 again"}`, seq: 5},
		}, `{"n":"5 again"}`, 5},
		{"a stale epoch is fenced", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "b", snapshot: `{"n":7}`, seq: 7},
			{lease: "a", snapshot: `{"n":8}`, seq: 8, want: pgstore.ErrLeaseLost},
		}, `{"n":7}`, 7},
		{"the new epoch still never goes back", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "b", snapshot: `{"n":4}`, seq: 4},
		}, `{"n":5}`, 5},
		{"a forged lease (right epoch, other node) is fenced", []save{
			{lease: "forged", snapshot: `{"n":1}`, seq: 1, want: pgstore.ErrLeaseLost},
		}, "", 0},
		{"a released lease is fenced", []save{
			{lease: "released", snapshot: `{"n":1}`, seq: 1, want: pgstore.ErrLeaseLost},
		}, "", 0},
		{"invalid JSON stores nothing", []save{
			{lease: "a", snapshot: `{"n":5}`, seq: 5},
			{lease: "a", snapshot: `{"n":`, seq: 6, want: errBad},
			{lease: "a", snapshot: ``, seq: 7, want: errBad},
			{lease: "a", snapshot: `{}`, seq: -1, want: errBad},
		}, `{"n":5}`, 5},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			session := fmt.Sprintf("s%d", i)
			// Lease a is epoch 1 (expired by the time of b); b is epoch 2,
			// taken only when a save names it.
			a, err := st.AcquireLease(ctx, session, "a", ttl)
			if err != nil {
				t.Fatal(err)
			}
			var b pgstore.Lease
			for j, s := range tc.saves {
				var l pgstore.Lease
				switch s.lease {
				case "a":
					l = a
				case "b":
					if b.Epoch == 0 {
						if b, err = pgstore.Later(st, 2*ttl).AcquireLease(ctx, session, "b", ttl); err != nil {
							t.Fatal(err)
						}
					}
					l = b
				case "forged":
					l = a
					l.Node = "b"
				case "released":
					if err := st.ReleaseLease(ctx, a); err != nil {
						t.Fatal(err)
					}
					l = a
				}
				err := st.SaveCheckpoint(ctx, l, json.RawMessage(s.snapshot), s.seq)
				switch {
				case s.want == errBad:
					if err == nil || errors.Is(err, pgstore.ErrLeaseLost) {
						t.Errorf("save %d: error %v, want a bad checkpoint", j, err)
					}
				case !errors.Is(err, s.want):
					t.Errorf("save %d: error %v, want %v", j, err, s.want)
				}
			}
			snap, seq, err := st.LoadCheckpoint(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			if string(snap) != tc.wantSnap || seq != tc.wantSeq || (tc.wantSnap == "") != (snap == nil) {
				t.Errorf("checkpoint %q at %d, want %q at %d", snap, seq, tc.wantSnap, tc.wantSeq)
			}
		})
	}
}

// TestCheckpointDuringTakeover: the holder checkpoints as fast as it can
// while another node takes its lease over. Every checkpoint the old holder
// was told it saved is one the new holder loads after taking over (none
// lands after), and then the old holder is fenced.
func TestCheckpointDuringTakeover(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	a, err := st.AcquireLease(ctx, "s", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	saved := make(chan int64, 1) // the first seq saved, once
	var lastSaved int64
	done := make(chan error, 1)
	go func() {
		for seq := int64(1); ; seq++ {
			err := st.SaveCheckpoint(ctx, a, json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)), seq)
			if err != nil {
				done <- err
				return
			}
			lastSaved = seq // read after done: the channel orders it
			if seq == 1 {
				saved <- seq
			}
		}
	}()
	<-saved
	b, err := pgstore.Later(st, 2*ttl).AcquireLease(ctx, "s", "b", ttl)
	if err != nil || b.Epoch != 2 {
		t.Fatalf("takeover: %+v, %v", b, err)
	}
	snap, seq, err := st.LoadCheckpoint(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Fatalf("the old holder stopped with %v, want ErrLeaseLost", err)
	}
	if seq != lastSaved || string(snap) != fmt.Sprintf(`{"seq":%d}`, seq) {
		t.Errorf("the new holder loaded %s at %d; the old holder last saved %d", snap, seq, lastSaved)
	}
	if snap2, seq2, err := st.LoadCheckpoint(ctx, "s"); err != nil || seq2 != seq || string(snap2) != string(snap) {
		t.Errorf("after the old holder was fenced: %s at %d, %v; want %s at %d", snap2, seq2, err, snap, seq)
	}
}

// TestListOwner: List names the node holding a session's unexpired lease.
func TestListOwner(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	dir := t.TempDir()
	for _, id := range []string{"free", "held"} {
		l, err := st.Create(ctx, store.Key{WorkDir: dir, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	if _, err := st.AcquireLease(ctx, "held", "node-1", ttl); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		at   time.Duration
		want map[string]string
	}{
		{"leased", 0, map[string]string{"free": "", "held": "node-1"}},
		{"lease expired", 2 * ttl, map[string]string{"free": "", "held": ""}},
	} {
		infos, err := pgstore.Later(st, tc.at).List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, in := range infos {
			got[in.ID] = in.Owner
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: owners %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheckpointWaitsForTakeover: a checkpoint that comes while a takeover
// is being written (its transaction not yet committed) waits for it and is
// then fenced, instead of landing under the epoch the takeover ends. The
// takeover is held open by hand, with the statement AcquireLease commits
// at once; the test sees the checkpoint waiting in pg_stat_activity.
func TestCheckpointWaitsForTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.AcquireLease(ctx, "s", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	takeover, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback(ctx) //nolint:errcheck // committed below unless the test failed
	if _, err := takeover.Exec(ctx, `UPDATE leases SET node = 'b', epoch = epoch + 1 WHERE session = 's'`); err != nil {
		t.Fatal(err)
	}
	saved := make(chan error, 1)
	go func() {
		saved <- st.SaveCheckpoint(ctx, a, json.RawMessage(`{}`), 1)
	}()
	deadline := time.Now().Add(time.Minute)
	for waiting := false; !waiting; {
		select {
		case err := <-saved:
			t.Fatalf("a checkpoint returned %v while a takeover was uncommitted", err)
		default:
		}
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO checkpoints%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the checkpoint neither returned nor waited for the takeover within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := takeover.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-saved; !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Errorf("the checkpoint under the taken-over epoch: %v, want ErrLeaseLost", err)
	}
	if snap, seq, err := st.LoadCheckpoint(ctx, "s"); err != nil || snap != nil || seq != 0 {
		t.Errorf("checkpoint %s at %d, %v; want none", snap, seq, err)
	}
}

// TestFencedLog: a log opened under a lease appends while that lease is
// the session's, expired included, and not once another node took it; the
// records it wrote before stay.
func TestFencedLog(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := t.Context()
	a, err := st.AcquireLease(ctx, "fs", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{WorkDir: t.TempDir(), ID: "fs"}
	lg, err := st.Fenced(a).Create(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Append(ctx, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	later := pgstore.Later(st, 2*ttl)
	if err := lg.Append(ctx, json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatalf("expired, not taken: %v", err)
	}
	if _, err := later.AcquireLease(ctx, "fs", "b", ttl); err != nil {
		t.Fatal(err)
	}
	if err := lg.Append(ctx, json.RawMessage(`{"n":3}`)); !errors.Is(err, pgstore.ErrLeaseLost) {
		t.Fatalf("after a takeover: %v, want ErrLeaseLost", err)
	}
	recs, _, err := st.Load(ctx, k)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records (%v), want 2", len(recs), err)
	}
	// Unheld names the session once b's lease expires too.
	for _, c := range []struct {
		st   *pgstore.Store
		want int
	}{{later, 0}, {pgstore.Later(st, 4*ttl), 1}} {
		got, err := c.st.Unheld(ctx, []string{"fs"})
		if err != nil || len(got) != c.want {
			t.Fatalf("Unheld: %v %v, want %d", got, err, c.want)
		}
	}
	if got, err := st.Unheld(ctx, []string{"never-leased"}); err != nil || len(got) != 1 {
		t.Fatalf("Unheld of a session never leased: %v %v", got, err)
	}
}

// TestRenewLeases: one statement renews exactly the leases still held at
// their epoch — not one released, nor one another node took after it
// expired, nor one named with a wrong epoch — each with its new expiry.
func TestRenewLeases(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	acquire := func(at *pgstore.Store, session, node string) pgstore.Lease {
		t.Helper()
		l, err := at.AcquireLease(ctx, session, node, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	held1, held2 := acquire(st, "r1", "a"), acquire(st, "r2", "a")
	released := acquire(st, "r3", "a")
	if err := st.ReleaseLease(ctx, released); err != nil {
		t.Fatal(err)
	}
	taken := acquire(st, "r4", "a")
	taker := acquire(pgstore.Later(st, 2*ttl), "r4", "b") // a's lease expired to it
	forged := acquire(st, "r5", "a")
	forged.Epoch++

	renewed, err := st.RenewLeases(ctx, []pgstore.Lease{held1, released, taken, forged, held2}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]pgstore.Lease{}
	for _, l := range renewed {
		got[l.Session] = l
	}
	if len(renewed) != 2 || len(got) != 2 {
		t.Fatalf("renewed %+v, want r1 and r2 only", renewed)
	}
	for _, was := range []pgstore.Lease{held1, held2} {
		l, ok := got[was.Session]
		if !ok || l.Node != "a" || l.Epoch != was.Epoch || l.Expires.Before(was.Expires) {
			t.Errorf("%s renewed as %+v, was %+v", was.Session, l, was)
		}
	}
	if owner, err := pgstore.Later(st, 2*ttl).Owner(ctx, "r4"); err != nil || owner.Node != "b" || owner.Epoch != taker.Epoch {
		t.Errorf("r4's owner after the batch: %+v, %v; want b at epoch %d", owner, err, taker.Epoch)
	}
	if _, err := st.RenewLeases(ctx, []pgstore.Lease{{Session: "r1", Node: "a", Epoch: held1.Epoch}}, 0); err == nil {
		t.Error("a zero TTL was taken")
	}
}

// TestRenewalsDoNotWaitForAppends: a node streaming many sessions keeps
// about as many record appends waiting for the store's connections; its
// lease renewals must not queue behind them. On one shared pool, at 1,000
// streaming sessions and the default 10 s TTL, a renewal round waited past
// its leases' expiry and the node lost every session. Here the appends
// wait on a row another client locked, each holding one of the store's
// connections, all of them.
func TestRenewalsDoNotWaitForAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	busy := store.Key{WorkDir: t.TempDir(), ID: "busy"}
	if _, err := st.Create(ctx, busy); err != nil {
		t.Fatal(err)
	}
	lease, err := st.AcquireLease(ctx, "quiet", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) //nolint:errcheck // rolled back below unless the test failed
	if _, err := lock.Exec(ctx, `SELECT 1 FROM sessions WHERE id = 'busy' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// pgxpool's default size is the greater of 4 and the CPUs: more
	// appends than that, and every connection of the pool waits.
	conns := max(4, runtime.NumCPU())
	logs := make([]store.Log, conns+4)
	for i := range logs {
		if logs[i], err = st.Open(ctx, busy); err != nil { // each Open takes a connection too
			t.Fatal(err)
		}
	}
	appended := make(chan error, len(logs))
	for _, lg := range logs {
		go func() { appended <- lg.Append(ctx, json.RawMessage(`{}`)) }()
	}
	deadline := time.Now().Add(time.Minute)
	for waiting := 0; waiting < conns; {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE sessions%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d appends wait for the locked row after a minute, want %d", waiting, conns)
		}
		time.Sleep(10 * time.Millisecond) // polls the database
	}

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	renewed, err := st.RenewLeases(rctx, []pgstore.Lease{lease}, ttl)
	if err != nil || len(renewed) != 1 {
		t.Fatalf("renewing while the store's connections wait on appends: %+v, %v", renewed, err)
	}
	if _, err := st.RenewLease(rctx, renewed[0], ttl); err != nil {
		t.Fatalf("renewing one lease while the store's connections wait on appends: %v", err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range logs {
		if err := <-appended; err != nil {
			t.Errorf("append after the row was let go: %v", err)
		}
	}
}
