package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram"
)

// forwarder takes the updates a webhook receives on any node of a relay
// cluster to the node that holds the channel. Every node serves the
// webhook (behind the platform's load balancer, any of them may be
// posted to); the holder takes an update itself, another node forwards
// it to the holder by NATS request/reply and answers the platform only
// once the holder stored it. When no node holds the channel (the holder
// died and its lease has not expired) or the holder refused it, the
// webhook answers 503 and the platform posts the update again later: an
// update is never acknowledged before a node stored it.
type forwarder struct {
	nc      *nats.Conn
	subject string
	// timeout bounds a forwarded update's round trip.
	timeout time.Duration

	mu    sync.Mutex
	local func(context.Context, channel.Inbound) error // the holder's relay, while this node holds the channel
}

// accepted is the holder's answer to a forwarded update it stored.
const accepted = "ok"

// newForwarder returns the forwarder of account's webhook.
func newForwarder(nc *nats.Conn, account string, timeout time.Duration) *forwarder {
	return &forwarder{nc: nc, subject: inboundSubject(account), timeout: timeout}
}

// inboundSubject is where the holder of account's channel takes the
// updates other nodes received: "sluice.relay.<account>.inbound", the
// account's characters other than letters, digits, '-' and '_' made '_'.
func inboundSubject(account string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, account)
	return "sluice.relay." + clean + ".inbound"
}

// accept is the webhook's: the local relay's when this node holds the
// channel, else the holder's by NATS.
func (f *forwarder) accept(ctx context.Context, in channel.Inbound) error {
	f.mu.Lock()
	local := f.local
	f.mu.Unlock()
	if local != nil {
		return local(ctx, in)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	m, err := f.nc.RequestWithContext(rctx, f.subject, b)
	if err != nil {
		return fmt.Errorf("relay: forwarding an update to the channel's holder: %w", err)
	}
	if string(m.Data) != accepted {
		return fmt.Errorf("relay: the channel's holder refused an update: %s", m.Data)
	}
	return nil
}

// serve makes accept take the updates of this node's webhook and of the
// others' until ctx ends.
func (f *forwarder) serve(ctx context.Context, accept func(context.Context, channel.Inbound) error) error {
	sub, err := f.nc.Subscribe(f.subject, func(m *nats.Msg) {
		var in channel.Inbound
		if err := json.Unmarshal(m.Data, &in); err != nil {
			m.Respond([]byte("bad update: " + err.Error()))
			return
		}
		if err := accept(ctx, in); err != nil {
			m.Respond([]byte(err.Error()))
			return
		}
		m.Respond([]byte(accepted))
	})
	if err == nil {
		// The server has the subscription once the flush returns: a
		// node forwarding from then on reaches this one.
		err = f.nc.FlushTimeout(f.timeout)
	}
	if err != nil {
		sub.Unsubscribe()
		return fmt.Errorf("relay: cannot take forwarded updates: %w", err)
	}
	f.mu.Lock()
	// The request ends before the agent does: the relay's context, not
	// the request's.
	f.local = func(_ context.Context, in channel.Inbound) error { return accept(ctx, in) }
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.local = nil
	f.mu.Unlock()
	if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return err
	}
	return ctx.Err()
}

// clusterWebhook is the Telegram channel of a relay cluster node with a
// webhook: the node's server (started once for the process, see run)
// takes updates through the forwarder; receiving, for the holder, is
// taking them.
type clusterWebhook struct {
	*telegram.Client
	fw *forwarder
}

func (c *clusterWebhook) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	return c.fw.serve(ctx, func(ctx context.Context, in channel.Inbound) error {
		handle(ctx, in)
		return nil
	})
}

func (c *clusterWebhook) ReceiveAccepting(ctx context.Context, accept func(context.Context, channel.Inbound) error) error {
	return c.fw.serve(ctx, accept)
}
