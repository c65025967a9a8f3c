package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// ChannelLeases is what a relay node needs of the cluster's leases
// (store/pgstore's): one lease per chat account, with an epoch, taken by
// compare-and-set and expiring by the database's clock.
type ChannelLeases interface {
	AcquireLease(ctx context.Context, key, node string, ttl time.Duration) (pgstore.Lease, error)
	RenewLease(ctx context.Context, l pgstore.Lease, ttl time.Duration) (pgstore.Lease, error)
	ReleaseLease(ctx context.Context, l pgstore.Lease) error
}

// Cluster runs a relay as one node of several on one chat account: the
// node that holds the account's channel lease receives, runs the agent and
// sends; the others wait, trying the lease every tenth of its TTL, and one
// of them takes over when the holder stops renewing (it died, or cannot
// reach the database) — within the TTL and a tenth.
type Cluster struct {
	Leases ChannelLeases
	// Store is the account's delivery state in PostgreSQL: its writes
	// are fenced by the lease while this node holds it.
	Store *store.Store
	// Key names the channel lease ("relay/telegram/123456").
	Key    string
	Node   string
	TTL    time.Duration
	Logger *slog.Logger
}

// errLeaseLost ends a term whose lease another node took or that could
// not be renewed in time.
var errLeaseLost = errors.New("relay: the channel's lease was lost")

// Hold runs term each time this node holds the channel lease, with a
// context that ends when the lease is lost; then it waits for the lease
// again. It returns when ctx ends (releasing the lease, so that another
// node takes over at once) or when term fails for another reason than the
// lease's loss.
func (c Cluster) Hold(ctx context.Context, term func(context.Context) error) error {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	log := c.Logger.With("node", c.Node, "lease", c.Key)
	retry := max(c.TTL/10, 50*time.Millisecond)
	waiting := false
	for {
		l, err := c.Leases.AcquireLease(ctx, c.Key, c.Node, c.TTL)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, pgstore.ErrLeaseHeld) {
				log.Warn("relay: cannot take the channel's lease; retrying", "err", err)
			} else if !waiting {
				log.Info("relay: standing by: another node holds the channel", "holder", l.Node)
			}
			waiting = true
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retry):
			}
			continue
		}
		waiting = false
		log.Info("relay: holding the channel", "epoch", l.Epoch)
		err = c.term(ctx, l, term)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, errLeaseLost) {
			return err
		}
		log.Warn("relay: lost the channel; standing by")
	}
}

// term runs term under lease l, renewing it every third of the TTL, and
// releases it after.
func (c Cluster) term(ctx context.Context, l pgstore.Lease, term func(context.Context) error) error {
	c.Store.Fence(store.Lease{Key: l.Session, Node: l.Node, Epoch: l.Epoch})
	defer c.Store.Fence(store.Lease{})
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan pgstore.Lease, 1)
	go func() {
		defer close(renewed)
		renewed <- c.renew(tctx, l, cancel)
	}()
	err := term(tctx)
	cancel(nil)
	last := <-renewed
	if cause := context.Cause(tctx); errors.Is(cause, errLeaseLost) {
		return cause
	}
	// Given up (shutdown, or the relay cannot go on): another node may
	// take over at once.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if rerr := c.Leases.ReleaseLease(rctx, last); rerr != nil && !errors.Is(rerr, pgstore.ErrLeaseLost) {
		c.Logger.Warn("relay: cannot release the channel's lease; it expires by itself", "err", rerr)
	}
	return err
}

// renew keeps l until ctx ends, and returns it as last renewed. A renewal
// refused (another node took the lease) or not done within the TTL of
// the last one (the database is unreachable: another node may take the
// lease when it expires) cancels the term.
func (c Cluster) renew(ctx context.Context, l pgstore.Lease, cancel context.CancelCauseFunc) pgstore.Lease {
	every := c.TTL / 3
	// The lease is safe until TTL after the last renewal began (the
	// database judges expiry from its statement, which ran after).
	safeUntil := time.Now().Add(c.TTL)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return l
		case <-t.C:
		}
		began := time.Now()
		rctx, rcancel := context.WithDeadline(ctx, safeUntil)
		nl, err := c.Leases.RenewLease(rctx, l, c.TTL)
		rcancel()
		switch {
		case err == nil:
			l, safeUntil = nl, began.Add(c.TTL)
			t.Reset(every)
		case ctx.Err() != nil:
			return l
		case errors.Is(err, pgstore.ErrLeaseLost) || !time.Now().Before(safeUntil):
			cancel(fmt.Errorf("%w: %w", errLeaseLost, err))
			return l
		default:
			c.Logger.Warn("relay: cannot renew the channel's lease; retrying", "err", err)
			t.Reset(min(every/3, time.Until(safeUntil)))
		}
	}
}
