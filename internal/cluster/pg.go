package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// PG is the Leases of a PostgreSQL store.
func PG(st *pgstore.Store) Leases { return pgLeases{st} }

type pgLeases struct{ st *pgstore.Store }

// leaseErr gives pgstore's lease errors this package's names.
func leaseErr(err error) error {
	switch {
	case errors.Is(err, pgstore.ErrLeaseHeld):
		return fmt.Errorf("%w: %w", ErrLeaseHeld, err)
	case errors.Is(err, pgstore.ErrLeaseLost):
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return err
}

func fromPG(l pgstore.Lease) Lease {
	return Lease{Session: l.Session, Node: l.Node, Epoch: l.Epoch, Expires: l.Expires}
}

func toPG(l Lease) pgstore.Lease {
	return pgstore.Lease{Session: l.Session, Node: l.Node, Epoch: l.Epoch, Expires: l.Expires}
}

func (p pgLeases) AcquireLease(ctx context.Context, session, node string, ttl time.Duration) (Lease, error) {
	l, err := p.st.AcquireLease(ctx, session, node, ttl)
	return fromPG(l), leaseErr(err)
}

func (p pgLeases) RenewLeases(ctx context.Context, ls []Lease, ttl time.Duration) ([]Lease, error) {
	pls := make([]pgstore.Lease, len(ls))
	for i, l := range ls {
		pls[i] = toPG(l)
	}
	renewed, err := p.st.RenewLeases(ctx, pls, ttl)
	out := make([]Lease, len(renewed))
	for i, l := range renewed {
		out[i] = fromPG(l)
	}
	return out, leaseErr(err)
}

func (p pgLeases) ReleaseLease(ctx context.Context, l Lease) error {
	return leaseErr(p.st.ReleaseLease(ctx, toPG(l)))
}

func (p pgLeases) Owner(ctx context.Context, session string) (Lease, error) {
	l, err := p.st.Owner(ctx, session)
	return fromPG(l), leaseErr(err)
}

func (p pgLeases) SaveCheckpoint(ctx context.Context, l Lease, snapshot json.RawMessage, seq int64) error {
	return leaseErr(p.st.SaveCheckpoint(ctx, toPG(l), snapshot, seq))
}

func (p pgLeases) LoadCheckpoint(ctx context.Context, session string) (json.RawMessage, int64, error) {
	return p.st.LoadCheckpoint(ctx, session)
}

func (p pgLeases) Unheld(ctx context.Context, sessions []string) ([]string, error) {
	return p.st.Unheld(ctx, sessions)
}

func (p pgLeases) Fence(st store.Store, l Lease) store.Store {
	if pg, ok := st.(*pgstore.Store); ok {
		return pg.Fenced(toPG(l))
	}
	return st
}
