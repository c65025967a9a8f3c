package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// BenchmarkDeltaThroughTheLog is what the log adds to a delta's delivery:
// the owner's fenced publish (until the stream's ack, when the owner's own
// clients get it) and a follower's receipt (when another node's clients
// get it), one delta at a time on a loopback NATS server. It reports the
// p50 and p99 of both.
func BenchmarkDeltaThroughTheLog(b *testing.B) {
	l := benchLog(b)
	const s = "bench"
	w, err := l.Writer(b.Context(), s, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range answer(s, 0) {
		if err := w.Append(b.Context(), ev); err != nil {
			b.Fatal(err)
		}
	}
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	go l.Follow(ctx, s, 2, func(protocol.Event) error { got <- time.Now(); return nil })
	acked := make([]time.Duration, 0, b.N)
	followed := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		sent := time.Now()
		if err := w.Append(b.Context(), chunk(s, int64(3+i), "word ")); err != nil {
			b.Fatal(err)
		}
		acked = append(acked, time.Since(sent))
		followed = append(followed, (<-got).Sub(sent))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"ack", acked}, {"follower", followed}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}

// BenchmarkDeltaAddedByTheCluster is what cluster mode adds to a streamed
// delta's delivery inside the nodes, with real agents, NATS server and
// PostgreSQL: from the owner's agent publishing the delta (where a single
// node's clients would get it) to the owner's mirror (where its clients get
// it, once the stream stored it) and to another node's mirror (where that
// node's clients get it). The models stream one delta per iteration, in
// every session at once: with several sessions, the deltas of one
// iteration contend for the same CPUs, connections and stream, as the
// lockstep streams of clusterload do. What the faces do after that (a
// WebSocket's coalescing window) is the same in both modes and left out.
// It reports the p50 and p99 of both additions over every session's deltas.
//
//	go test -run '^$' -bench DeltaAddedByTheCluster -benchtime 2000x ./internal/cluster/
func BenchmarkDeltaAddedByTheCluster(b *testing.B) {
	for _, sessions := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) { benchmarkDeltaAdded(b, sessions) })
	}
}

// reader notes when it got each delta of a session, in order.
type reader struct {
	at   []time.Time
	next chan int
}

func readDeltas(b *testing.B, sub session.Subscription) *reader {
	r := &reader{at: make([]time.Time, b.N), next: make(chan int, b.N)}
	go func() {
		defer sub.Close()
		n := 0
		for n < b.N {
			ev, err := sub.Next(b.Context())
			if err != nil {
				return
			}
			c, ok := ev.(protocol.AssistantContentUpdated)
			if !ok || c.Stage != protocol.StageStreaming {
				continue
			}
			now := time.Now()
			for range strings.Count(c.Chunk, "word ") {
				r.at[n] = now
				r.next <- n
				n++
			}
		}
	}()
	return r
}

func benchmarkDeltaAdded(b *testing.B, sessions int) {
	url, dsn, dir := natstest.URL(b), pgtest.DSN(b), b.TempDir()
	// One gate per delta, shared by every session's answer: closing it
	// lets each of them stream that delta.
	gates := make([]chan struct{}, b.N)
	steps := modeltest.Response(modeltest.Start("m1"),
		[]modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockText}}})
	for i := range gates {
		gates[i] = make(chan struct{})
		steps = append(steps, modeltest.Gate(gates[i])...)
		steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: "word "}})
	}
	steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockStop, Index: 0}})
	steps = append(steps, modeltest.Stop(model.StopEndTurn)...)
	answers := make([][]modeltest.Step, sessions)
	for i := range answers {
		answers[i] = steps
	}
	owner := startNode(b, "a", url, dsn, modeltest.NewScript(answers...))
	other := startNode(b, "b", url, dsn, modeltest.NewScript())
	var local, onOwner, crossNode []*reader
	var handles []session.Session
	for range sessions {
		ha, err := owner.New(b.Context(), owner.options(dir))
		if err != nil {
			b.Fatal(err)
		}
		hb := other.open(b, ha.ID())
		handles = append(handles, ha)
		local = append(local, readDeltas(b, ha.(*handle).owner().sess.Subscribe(agent.SubscribeOptions{})))
		_, sub := ha.SnapshotAndSubscribe()
		onOwner = append(onOwner, readDeltas(b, sub))
		_, sub = hb.SnapshotAndSubscribe()
		crossNode = append(crossNode, readDeltas(b, sub))
	}
	for _, h := range handles {
		if _, err := h.Submit(b.Context(), "go", false); err != nil {
			b.Fatal(err)
		}
	}
	readers := slices.Concat(local, onOwner, crossNode)
	b.ResetTimer()
	for i := range b.N {
		close(gates[i])
		for _, r := range readers {
			select {
			case <-r.next:
			case <-time.After(time.Minute): // a hang's bound, not a measurement
				b.Fatalf("delta %d never reached a reader", i)
			}
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		rs   []*reader
	}{{"owner", onOwner}, {"cross", crossNode}} {
		var d []time.Duration
		for s, r := range m.rs {
			for i := range b.N {
				d = append(d, r.at[i].Sub(local[s].at[i]))
			}
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), m.name+"-added-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), m.name+"-added-p99-µs")
	}
	// The runs end before the nodes close, so that nothing is aborted.
	for _, h := range handles {
		for deadline := time.Now().Add(time.Minute); h.Running(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("a run never ended")
			}
		}
	}
}
