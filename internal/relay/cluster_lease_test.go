package relay

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// cutOff is a node's leases that fail while cut is set: the node cannot
// reach the database.
type cutOff struct {
	ChannelLeases
	cut atomic.Bool
}

var errCut = errors.New("database unreachable")

func (c *cutOff) AcquireLease(ctx context.Context, key, node string, ttl time.Duration) (pgstore.Lease, error) {
	if c.cut.Load() {
		return pgstore.Lease{}, errCut
	}
	return c.ChannelLeases.AcquireLease(ctx, key, node, ttl)
}

func (c *cutOff) RenewLease(ctx context.Context, l pgstore.Lease, ttl time.Duration) (pgstore.Lease, error) {
	if c.cut.Load() {
		return pgstore.Lease{}, errCut
	}
	return c.ChannelLeases.RenewLease(ctx, l, ttl)
}

// TestChannelLease: one node holds the channel at a time. A holder that
// cannot renew stops its term within the TTL, and the standby node takes
// the channel once the lease expired; the old holder, back in touch,
// stands by; a holder that stops releases the channel and the standby
// takes it at once with the next epoch; a term that fails for another
// reason ends Hold with its error and releases the lease.
func TestChannelLease(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := waitCtx(t)
	pg, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	const key, account = "relay/telegram/lease", "telegram/lease"
	type event struct {
		node  string
		held  bool // took the channel (else: its term ended)
		epoch int64
		write error // a write of the node's store when its term began
	}
	events := make(chan event, 16)
	node := func(id string, leases ChannelLeases) Cluster {
		st, err := store.OpenPostgres(ctx, dsn, account)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return Cluster{Leases: leases, Store: st, Key: key, Node: id, TTL: 600 * time.Millisecond}
	}
	term := func(c Cluster) func(context.Context) error {
		return func(ctx context.Context) error {
			l, _ := pg.Owner(ctx, key)
			events <- event{node: c.Node, held: true, epoch: l.Epoch, write: c.Store.Put(ctx, "holder", c.Node)}
			<-ctx.Done()
			events <- event{node: c.Node}
			return ctx.Err()
		}
	}
	next := func(want event) event {
		t.Helper()
		select {
		case e := <-events:
			if e.node != want.node || e.held != want.held {
				t.Fatalf("event %+v, want node %s held %v", e, want.node, want.held)
			}
			if e.write != nil {
				t.Errorf("%s could not write its store as the holder: %v", e.node, e.write)
			}
			return e
		case <-ctx.Done():
			t.Fatalf("waiting for %+v: %v", want, ctx.Err())
		}
		return event{}
	}
	leasesA := &cutOff{ChannelLeases: pg}
	a, b := node("a", leasesA), node("b", pg)
	ctxA, stopA := context.WithCancel(ctx)
	ctxB, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- a.Hold(ctxA, term(a)) }()
	e1 := next(event{node: "a", held: true})
	go func() { doneB <- b.Hold(ctxB, term(b)) }()

	leasesA.cut.Store(true)
	next(event{node: "a"}) // a stops relaying: it could not renew within the TTL
	e2 := next(event{node: "b", held: true})
	if e2.epoch != e1.epoch+1 {
		t.Errorf("b took epoch %d after a's %d", e2.epoch, e1.epoch)
	}
	if err := a.Store.Put(ctx, "holder", "a"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("a write of the node that lost the channel: %v, want ErrFenced", err)
	}
	leasesA.cut.Store(false) // a is back, and stands by

	stopB()
	if err := <-doneB; !errors.Is(err, context.Canceled) {
		t.Errorf("b's Hold: %v", err)
	}
	next(event{node: "b"})
	e3 := next(event{node: "a", held: true})
	if e3.epoch != e2.epoch+1 {
		t.Errorf("a took epoch %d after b's %d", e3.epoch, e2.epoch)
	}
	if v, err := a.Store.Get(ctx, "holder"); v != "a" || err != nil {
		t.Errorf("holder = %q, %v", v, err)
	}
	stopA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Errorf("a's Hold: %v", err)
	}
	next(event{node: "a"})
	if l, _ := pg.Owner(ctx, key); l.Node != "" {
		t.Errorf("after both stopped the channel is held by %q", l.Node)
	}

	// A term that fails ends Hold with its error, the lease released.
	boom := errors.New("cannot receive")
	if err := b.Hold(ctx, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Hold with a failing term: %v", err)
	}
	if l, _ := pg.Owner(ctx, key); l.Node != "" {
		t.Errorf("after a failed term the channel is held by %q", l.Node)
	}
}
