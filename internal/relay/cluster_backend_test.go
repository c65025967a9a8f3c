package relay

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cluster"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/backend/sluiceagent"
	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/store/pgstore"
)

// startNode is one cluster node of the test, as a relay process holds one.
func startClusterNode(t *testing.T, id, url, dsn string, p *modeltest.Script) (*cluster.Node, func(string) agent.Options) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(id))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	options := func(dir string) agent.Options {
		return agent.Options{Provider: p, Store: pg, WorkDir: dir, Stream: modeltest.StreamOptions()}
	}
	n, err := cluster.Start(t.Context(), cluster.Config{NodeID: id, NATS: nc, Leases: cluster.PG(pg), LeaseTTL: 3 * time.Second,
		Options: func(_ context.Context, dir string) (agent.Options, error) { return options(dir), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close node %s: %v", id, err)
		}
		nc.Close()
		pg.Close()
	})
	return n, options
}

// answer runs one question and returns the messages the router makes of
// its events.
func answerIn(t *testing.T, conv backend.Conversation, text string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rn, err := conv.Start(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	rt := route.New(4096)
	var out []string
	for {
		ev, err := rn.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rt.Apply(ev) {
			out = append(out, m.Text)
		}
	}
	for _, m := range rt.Finish(rn.Result()) {
		out = append(out, m.Text)
	}
	return out
}

// TestChatAcrossNodes: with backend/sluiceagent in cluster mode, a chat's session is a cluster session. The node
// that opens it first runs it; another relay node, given the same store,
// opens the same session — whose agent still runs on the first node —
// and its question is answered there, the events reaching it through the
// log. After /new the chat has a new session.
func TestChatAcrossNodes(t *testing.T) {
	t.Parallel()
	url := natstest.URL(t) // a cluster of its own (sessions, sweepers)
	dsn := pgtest.DSN(t)
	p := modeltest.NewScript(
		modeltest.Answer("m1", "Hello ", "there."),
		modeltest.Answer("m2", "Second answer."),
		modeltest.Answer("m3", "Fresh start."),
	)
	nodeA, optsA := startClusterNode(t, "a", url, dsn, p)
	nodeB, optsB := startClusterNode(t, "b", url, dsn, p)
	kv := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	defer kv.Close()
	work := t.TempDir()
	beA := sluiceagent.New(sluiceagent.Config{Cluster: &sluiceagent.Cluster{Host: nodeA, Options: optsA, WorkDir: work}, KV: kv})
	beB := sluiceagent.New(sluiceagent.Config{Cluster: &sluiceagent.Cluster{Host: nodeB, Options: optsB, WorkDir: work}, KV: kv})
	defer beB.Close()
	defer beA.Close()
	ctx := t.Context()

	convA, err := beA.Open(ctx, "5")
	if err != nil {
		t.Fatal(err)
	}
	if got := answerIn(t, convA, "first question"); strings.Join(got, "|") != "Hello there." {
		t.Errorf("first answer: %q", got)
	}
	convB, err := beB.Open(ctx, "5")
	if err != nil {
		t.Fatal(err)
	}
	if convB.Session() != convA.Session() {
		t.Fatalf("node b opened session %s, node a runs %s", convB.Session(), convA.Session())
	}
	if owner := nodeB.Owner(ctx, convA.Session()); owner != "a" {
		t.Errorf("owner %q, want a", owner)
	}
	if got := answerIn(t, convB, "second question"); strings.Join(got, "|") != "Second answer." {
		t.Errorf("answer through node b: %q", got)
	}
	if n := p.Count(); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	if req := p.Request(1); len(req.Messages) < 3 {
		t.Errorf("the second question's request has %d messages: not the chat's session", len(req.Messages))
	}

	old := convA.Session()
	if err := convA.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if convA.Session() == old {
		t.Error("/new kept the session")
	}
	if got := answerIn(t, convA, "third"); strings.Join(got, "|") != "Fresh start." {
		t.Errorf("answer in the new session: %q", got)
	}
	if req := p.Request(2); len(req.Messages) != 1 {
		t.Errorf("the new session's request has %d messages, want 1", len(req.Messages))
	}
}
