package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/model/modeltest"
)

// countedRenewals records how many leases each RenewLeases call renewed.
type countedRenewals struct {
	Leases
	mu     sync.Mutex
	rounds []int
	more   chan struct{} // a round was recorded
}

func (c *countedRenewals) RenewLeases(ctx context.Context, ls []Lease, ttl time.Duration) ([]Lease, error) {
	r, err := c.Leases.RenewLeases(ctx, ls, ttl)
	if err == nil {
		c.mu.Lock()
		c.rounds = append(c.rounds, len(r))
		c.mu.Unlock()
		select {
		case c.more <- struct{}{}:
		default:
		}
	}
	return r, err
}

// TestLeasesRenewedTogether: a node renews the leases of all the sessions
// it runs in one call per round (up to renewChunk of them), and keeps them
// all past several TTLs.
func TestLeasesRenewedTogether(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	var counted *countedRenewals
	a := startNode(t, "a", url, dsn, modeltest.NewScript(), func(c *Config) {
		counted = &countedRenewals{Leases: c.Leases, more: make(chan struct{}, 1)}
		c.Leases, c.LeaseTTL = counted, time.Second
	})
	const sessions = 12
	var hs []*handle
	for range sessions {
		h, err := a.New(t.Context(), a.options(dir))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h.(*handle))
	}
	// Rounds that renew every session, until five have: past
	// several TTLs, so a session left out would have been lost.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	full := 0
	for seen := 0; full < 5; {
		select {
		case <-ctx.Done():
			t.Fatalf("rounds so far: %v", counted.rounds)
		case <-counted.more:
		}
		counted.mu.Lock()
		for _, n := range counted.rounds[seen:] {
			if n == sessions {
				full++
			}
		}
		seen = len(counted.rounds)
		counted.mu.Unlock()
	}
	for _, h := range hs {
		if h.owner() == nil {
			t.Fatalf("session %s was lost while its lease was renewed", h.id)
		}
	}
}
