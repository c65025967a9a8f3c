package agent

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// sessionOf returns a bus holding n finished messages and one streaming
// assistant message, and a subscriber following it with its own list.
func sessionOf(n int) (*bus, *Subscription, *protocol.List) {
	msgs := make([]protocol.Message, 0, n+1)
	for i := range n {
		role := protocol.RoleUser
		if i%2 == 1 {
			role = protocol.RoleAssistant
		}
		msgs = append(msgs, protocol.Message{ID: fmt.Sprintf("m%d", i), Role: role, Blocks: []protocol.Block{
			{Type: protocol.BlockText, Content: strings.Repeat("x", 200), Stage: protocol.StageEnd},
		}})
	}
	msgs = append(msgs, protocol.Message{ID: "live", Role: protocol.RoleAssistant, Blocks: []protocol.Block{}})
	b := newBus("bench", protocol.Snapshot{Messages: msgs})
	b.mu.Lock()
	snap := b.list.Snapshot()
	sub := b.subscribeLocked(SubscribeOptions{})
	b.mu.Unlock()
	return b, sub, protocol.NewList(snap)
}

// BenchmarkDelta measures one text delta published by the agent and
// applied by a subscriber, in sessions of growing length: the cost must be
// flat (DESIGN.md §2: a notification's cost is independent of the
// session's size).
func BenchmarkDelta(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			bus, sub, list := sessionOf(n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				bus.mu.Lock()
				_, err := bus.publishLocked(protocol.AssistantContentUpdated{MessageID: "live", BlockIndex: 0, Chunk: "token ", Stage: protocol.StageStreaming})
				bus.mu.Unlock()
				if err != nil {
					b.Fatal(err)
				}
				ev, err := sub.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := list.Apply(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// streamAnswer publishes an answer of size bytes in chunks of chunk bytes
// and returns the events' total JSON-RPC bytes and their number.
func streamAnswer(size, chunk int) (wire, events int) {
	bus, sub, _ := sessionOf(2)
	text := strings.Repeat("lorem ipsum dolor sit amet, ", size/28+1)[:size]
	ctx := context.Background()
	publish := func(ev protocol.Event) {
		bus.mu.Lock()
		if _, err := bus.publishLocked(ev); err != nil {
			panic(err)
		}
		bus.mu.Unlock()
		got, _ := sub.Next(ctx)
		line, _ := protocol.Encode(got)
		wire += len(line) + 1
		events++
	}
	for i := 0; i < len(text); i += chunk {
		publish(protocol.AssistantContentUpdated{MessageID: "live", Chunk: text[i:min(i+chunk, len(text))], Stage: protocol.StageStreaming})
	}
	publish(protocol.AssistantContentUpdated{MessageID: "live", Stage: protocol.StageEnd})
	return wire, events
}

// TestEventBytesLinear checks DESIGN.md §2 rule 1 on a 200 KB answer: the
// bytes of all its events are the answer plus a fixed overhead per event
// (O(answer), not O(answer²)).
func TestEventBytesLinear(t *testing.T) {
	t.Parallel()
	const size = 200_000
	for _, chunk := range []int{7, 64, 1024} {
		wire, events := streamAnswer(size, chunk)
		// The fixed part of one content event with its ids and seq.
		const perEvent = 160
		if limit := int(1.2*size) + perEvent*events; wire > limit {
			t.Errorf("chunks of %d: %d bytes on the wire for a %d-byte answer in %d events (limit %d)", chunk, wire, size, events, limit)
		}
	}
}

// BenchmarkAnswerBytes reports the wire bytes of a 200 KB answer.
func BenchmarkAnswerBytes(b *testing.B) {
	for b.Loop() {
		wire, events := streamAnswer(200_000, 16)
		b.ReportMetric(float64(wire)/200_000, "wire/answer")
		b.ReportMetric(float64(events), "events")
	}
}

// BenchmarkIdleSubscriber streams a 1 MB answer while one subscriber reads
// nothing: the agent is never blocked, and the backlog it leaves is about
// the size of the content, in a handful of merged events.
func BenchmarkIdleSubscriber(b *testing.B) {
	for b.Loop() {
		bus, idle, _ := sessionOf(2)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		chunk := strings.Repeat("y", 10)
		for range 100_000 {
			bus.mu.Lock()
			bus.publishLocked(protocol.AssistantContentUpdated{MessageID: "live", Chunk: chunk, Stage: protocol.StageStreaming})
			bus.mu.Unlock()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(idle.Pending()), "queued-events")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heap-MB")
		idle.Close()
	}
}
