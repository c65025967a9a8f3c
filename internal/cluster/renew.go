package cluster

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/store/pgstore"
)

// renewLeases keeps the leases of the sessions this node runs: each is
// due a third of the TTL after it was last asked for, and when one is due
// all are renewed, a few hundred per statement — not one statement per
// session, which at thousands of sessions outlasted the TTL. A failed round is tried again a twentieth of the TTL later.
// A lease not renewed before it may have expired (the database was down,
// or this process paused) or lost (another node took it) stops its
// session here: another node may run it by then.
func (n *Node) renewLeases() {
	defer n.wg.Done()
	t := time.NewTicker(max(n.cfg.LeaseTTL/20, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.renewRound()
	}
}

// owners returns the sessions this node runs.
func (n *Node) owners() []*owned {
	n.mu.Lock()
	hs := make([]*handle, 0, len(n.handles))
	for _, h := range n.handles {
		hs = append(hs, h)
	}
	n.mu.Unlock()
	var all []*owned
	for _, h := range hs {
		if o := h.owner(); o != nil {
			all = append(all, o)
		}
	}
	return all
}

// renewChunk bounds the leases one statement renews: the statement holds
// each row it renewed until it ends, so the session's fenced writes wait
// for all of it, and one that fails or is slow loses only its own. At
// 10,000 sessions one statement for all outlasted the TTL under load (the
// streaming sessions' writes hold their rows too) and all were lost.
const renewChunk = 250

// renewParallel bounds the statements of a round in flight at once: as
// many as the connections pgstore keeps for renewals alone, so that none
// waits for one (pgstore.RenewConns).
const renewParallel = pgstore.RenewConns

func (n *Node) renewRound() {
	ttl := n.cfg.LeaseTTL
	now := time.Now()
	var held []*owned
	due := false
	for _, o := range n.owners() {
		until := o.until()
		if !now.Before(until) {
			go o.h.lost(o, ErrLeaseExpired)
			continue
		}
		// Timed from when the lease was asked for, not from when the
		// session started here: a slow takeover may have used most of
		// the first TTL already.
		due = due || !now.Before(until.Add(ttl/3-n.validFor()))
		held = append(held, o)
	}
	if !due {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, renewParallel)
	for chunk := range slices.Chunk(held, renewChunk) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.renewChunk(chunk)
			<-sem
		}()
	}
	wg.Wait()
}

// renewChunk renews the leases of held in one statement.
func (n *Node) renewChunk(held []*owned) {
	leases := make([]Lease, len(held))
	var latest time.Time
	for i, o := range held {
		leases[i] = o.currentLease()
		if u := o.until(); u.After(latest) {
			latest = u
		}
	}
	asked := time.Now()
	// Bounded by the last of the leases: past it none is surely this
	// node's, and the round is tried again.
	ctx, cancel := context.WithDeadline(n.ctx, latest)
	renewed, err := n.cfg.Leases.RenewLeases(ctx, leases, n.cfg.LeaseTTL)
	cancel()
	if err != nil {
		if n.ctx.Err() == nil {
			n.log.Warn("cannot renew the leases", "sessions", len(leases), "err", err)
		}
		return
	}
	got := make(map[string]Lease, len(renewed))
	for _, l := range renewed {
		got[l.Session] = l
	}
	for i, o := range held {
		l, ok := got[leases[i].Session]
		if !ok || l.Epoch != leases[i].Epoch {
			go o.h.lost(o, ErrLeaseLost)
			continue
		}
		o.mu.Lock()
		o.lease, o.validUntil = l, n.validUntil(asked)
		o.mu.Unlock()
	}
}
