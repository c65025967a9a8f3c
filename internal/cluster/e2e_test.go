package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/cluster/clustertest"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
)

// TestKilledNodeLosesNothing runs three `sluice serve` nodes on one NATS
// server and one PostgreSQL database. Each session has a client on its
// owner and one on another node, which sends the message. Mid-stream the
// first node is killed with SIGKILL: its clients resume on another node
// from their last seq, its sessions are taken over by another node within
// the lease TTL without any command and end as interrupted, the others
// finish. Every client's reduced list then equals getMessages from every
// live node, with one contiguous seq (the reducer refuses a gap or a
// duplicate).
func TestKilledNodeLosesNothing(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	const held = 60 // chunks streamed before the kill
	answer := fakemodel.NumberedAnswer(2000)
	want := strings.Join(answer, "")
	release := make(chan struct{})
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: answer, HoldAfter: held, Release: release}
	})
	defer fm.Close()
	cfg := clustertest.NodeConfig{
		Bin: bin, NATS: natstest.URL(t), Postgres: pgtest.DSN(t), ModelURL: fm.URL(),
		Home: t.TempDir(), LeaseTTL: 2 * time.Second, Verbose: true,
	}
	var nodes []*clustertest.Node
	for i := range 3 {
		n, err := clustertest.Start(ctx, cfg, fmt.Sprintf("n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	defer func() {
		for _, n := range nodes[1:] {
			if _, err := n.Stop(); err != nil {
				t.Errorf("node %s: %v\n%s", n.ID, err, n.Stderr())
			}
		}
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("node %s log:\n%s", n.ID, n.Stderr())
			}
		}
	}()

	// Six sessions, two on each node; for each a client on the owner and
	// one on the next node.
	const sessions = 6
	type pair struct{ owner, other *clustertest.Client }
	var pairs []pair
	for i := range sessions {
		own, err := clustertest.Attach(ctx, nodes[i%3].WS, "")
		if err != nil {
			t.Fatal(err)
		}
		other, err := clustertest.Attach(ctx, nodes[(i+1)%3].WS, own.Session)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, _, o := other.Stats(); o != nodes[i%3].ID {
			t.Fatalf("session %d: the other node names owner %q, want %s", i, o, nodes[i%3].ID)
		}
		pairs = append(pairs, pair{own, other})
		defer own.Close()
		defer other.Close()
	}
	for _, p := range pairs {
		if err := p.other.Call(ctx, "sendMessage", map[string]any{"sessionId": p.other.Session, "text": "go"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Every client has seen the held part of its answer: mid-stream.
	for _, p := range pairs {
		for _, c := range []*clustertest.Client{p.owner, p.other} {
			if err := c.WaitSeq(ctx, held); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodes[0].Kill()
	// The clients of the killed node resume on the next one, as a page
	// reconnects, while the other answers are still held.
	for i, p := range pairs {
		for j, c := range []*clustertest.Client{p.owner, p.other} {
			if (i+j)%3 != 0 {
				continue // not attached to the killed node
			}
			select {
			case <-c.Gone():
			case <-ctx.Done():
				t.Fatalf("session %d: the client of the killed node is still connected", i)
			}
			if err := c.Resume(ctx, nodes[1].WS); err != nil {
				t.Fatalf("session %d: resume: %v", i, err)
			}
		}
	}
	close(release)
	for i, p := range pairs {
		for _, c := range []*clustertest.Client{p.owner, p.other} {
			if err := c.WaitIdle(ctx, held); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
	}

	// A session of the killed node goes on under its new owner: the next
	// message is answered whole, with seq continuing.
	p0 := pairs[0]
	before, _ := p0.other.State()
	if err := p0.other.Call(ctx, "sendMessage", map[string]any{"sessionId": p0.other.Session, "text": "again"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*clustertest.Client{p0.owner, p0.other} {
		if err := c.WaitIdle(ctx, before.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := p0.other.State(); after.Messages[len(after.Messages)-1].Text() != want {
		t.Errorf("the new owner's answer is not whole")
	}

	// listSessions, from any node, names each session's owner.
	var list struct {
		Sessions []struct {
			ID    string `json:"id"`
			Owner string `json:"owner"`
		} `json:"sessions"`
	}
	if err := pairs[1].owner.Call(ctx, "listSessions", map[string]any{}, &list); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, s := range list.Sessions {
		owners[s.ID] = s.Owner
	}
	for i, p := range pairs {
		if o := owners[p.owner.Session]; o == "" || o == nodes[0].ID || (i%3 != 0 && o != nodes[i%3].ID) {
			t.Errorf("session %d: listSessions names owner %q", i, o)
		}
	}

	for i, p := range pairs {
		killed := i%3 == 0
		ref, _ := p.owner.State()
		refJSON, _ := json.Marshal(ref)
		for _, n := range nodes[1:] {
			snap, owner, err := clustertest.Snapshot(ctx, n.WS, p.owner.Session)
			if err != nil {
				t.Fatal(err)
			}
			if killed && (owner == "" || owner == nodes[0].ID) {
				t.Errorf("session %d: owner after the kill %q", i, owner)
			}
			got, _ := json.Marshal(snap)
			if !bytes.Equal(got, refJSON) {
				t.Errorf("session %d: getMessages from %s differs from the client's list:\n%s\n%s", i, n.ID, got, refJSON)
			}
		}
		for _, c := range []*clustertest.Client{p.owner, p.other} {
			st, err := c.State()
			if err != nil {
				t.Errorf("session %d: %v", i, err)
			}
			if _, _, _, resyncs, _ := c.Stats(); resyncs != 0 {
				t.Errorf("session %d: a client was resynced with a snapshot instead of resuming", i)
			}
			if js, _ := json.Marshal(st); !bytes.Equal(js, refJSON) {
				t.Errorf("session %d: the two clients differ", i)
			}
		}
		a := ref.Messages[len(ref.Messages)-1]
		if i == 0 {
			a = ref.Messages[1] // the cut answer, before "again"
		}
		text := a.Text()
		switch {
		case !killed && text != want:
			t.Errorf("session %d: answer of %d bytes, want %d", i, len(text), len(want))
		case killed && (!strings.HasPrefix(want, text) || len(text) < held*len(answer[0])):
			t.Errorf("session %d: the cut answer %q is not what streamed", i, text)
		case killed && a.Blocks[len(a.Blocks)-1].Type != protocol.BlockError:
			t.Errorf("session %d: the interrupted answer has no error block: %+v", i, a.Blocks)
		}
	}
}
