package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

// manualTimer lets a test decide when an outbox's window ends.
type manualTimer struct {
	started chan chan time.Time
}

func newManualTimer() *manualTimer { return &manualTimer{started: make(chan chan time.Time, 16)} }

func (m *manualTimer) newTimer(time.Duration) (<-chan time.Time, func() bool) {
	c := make(chan time.Time, 1)
	m.started <- c
	return c, func() bool { return true }
}

// fire ends the window that the outbox opened.
func (m *manualTimer) fire(t *testing.T) {
	t.Helper()
	select {
	case c := <-m.started:
		c <- time.Time{}
	case <-time.After(testTimeout):
		t.Fatal("the outbox opened no window")
	}
}

// sink collects what an outbox sends.
type sink struct {
	msgs chan []byte
}

func (s *sink) send(_ context.Context, msg []byte) error {
	s.msgs <- msg
	return nil
}

func (s *sink) next(t *testing.T) []byte {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case <-time.After(testTimeout):
		t.Fatal("nothing sent")
		return nil
	}
}

func startOutbox(t *testing.T, window time.Duration, maxBytes int) (*outbox, *manualTimer, *sink) {
	t.Helper()
	o := newOutbox(window, maxBytes)
	mt := newManualTimer()
	o.newTimer = mt.newTimer
	s := &sink{msgs: make(chan []byte, 1024)}
	done := make(chan error, 1)
	go func() { done <- o.run(context.Background(), s.send) }()
	t.Cleanup(func() {
		o.close()
		if err := <-done; !errors.Is(err, errOutboxClosed) {
			t.Errorf("run: %v", err)
		}
	})
	return o, mt, s
}

func encode(t *testing.T, ev protocol.Event) []byte {
	t.Helper()
	b, err := protocol.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func delta(seq int64, chunk string) protocol.Event {
	return protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: seq}, MessageID: "a1", Chunk: chunk, Stage: protocol.StageStreaming}
}

func TestOutboxMergesDeltasWithinAWindow(t *testing.T) {
	t.Parallel()
	o, mt, s := startOutbox(t, time.Hour, 1<<20)
	ctx := context.Background()
	for i, c := range []string{"He", "llo", ", ", "world"} {
		if err := o.Write(ctx, encode(t, delta(int64(i+2), c))); err != nil {
			t.Fatal(err)
		}
	}
	mt.fire(t)
	ev, err := protocol.DecodeNotification(s.next(t))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ev.(protocol.AssistantContentUpdated)
	if !ok || got.Chunk != "Hello, world" || got.FirstSeq != 2 || got.Seq != 5 {
		t.Fatalf("got %+v, want one delta 2..5 with the chunks in order", ev)
	}
}

func TestOutboxSendsStructuralMessagesAtOnce(t *testing.T) {
	t.Parallel()
	o, _, s := startOutbox(t, time.Hour, 1<<20)
	ctx := context.Background()
	// A delta waits for its window; a response behind it must not: both go
	// at once, in order, without the window ending.
	o.Write(ctx, encode(t, delta(2, "a")))
	resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	o.Write(ctx, resp)
	if first := s.next(t); !json.Valid(first) || string(first) == string(resp) {
		t.Fatalf("first sent %s, want the delta", first)
	}
	if second := s.next(t); string(second) != string(resp) {
		t.Fatalf("second sent %s, want the response", second)
	}
}

func TestOutboxWithoutWindowSendsAtOnce(t *testing.T) {
	t.Parallel()
	o, _, s := startOutbox(t, -1, 1<<20)
	msg := encode(t, delta(2, "a"))
	o.Write(context.Background(), msg)
	if got := s.next(t); string(got) != string(msg) {
		t.Fatalf("sent %s", got)
	}
}

// TestOutboxNeverDropsOrReorders pushes a random session's events through
// an outbox whose windows end at random points, each written either as
// bytes (Write decodes what it can merge) or with its event (WriteEvent, as
// the rpc server does): applying what comes out must give the same list as
// applying what went in, with no gap and no duplicate.
func TestOutboxNeverDropsOrReorders(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			events := randomSession(rng, 400)
			o, mt, s := startOutbox(t, time.Hour, 1<<20)
			var want protocol.List
			var got protocol.List
			received := 0
			apply := func(msg []byte) {
				received++
				ev, err := protocol.DecodeNotification(msg)
				if err != nil {
					t.Fatal(err)
				}
				if err := got.Apply(ev); err != nil {
					t.Fatalf("apply %s: %v", msg, err)
				}
			}
			for _, ev := range events {
				if err := want.Apply(ev); err != nil {
					t.Fatal(err)
				}
				write := o.Write
				if rng.IntN(2) == 0 {
					write = func(ctx context.Context, msg []byte) error { return o.WriteEvent(ctx, msg, ev) }
				}
				if err := write(context.Background(), encode(t, ev)); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(8) == 0 {
					select {
					case c := <-mt.started:
						c <- time.Time{}
					default:
					}
				}
			}
			// End whatever window is open, then wait for the last event.
			for got.Seq() < want.Seq() {
				select {
				case c := <-mt.started:
					c <- time.Time{}
				case msg := <-s.msgs:
					apply(msg)
				case <-time.After(testTimeout):
					t.Fatalf("stuck at seq %d of %d", got.Seq(), want.Seq())
				}
			}
			wj, _ := json.Marshal(want.Snapshot())
			gj, _ := json.Marshal(got.Snapshot())
			if string(wj) != string(gj) {
				t.Fatalf("lists differ\nwant %s\ngot  %s", wj, gj)
			}
			if received >= len(events) {
				t.Errorf("nothing was merged: %d messages for %d events", received, len(events))
			}
		})
	}
}

// randomSession makes n events of a plausible session: messages, text and
// reasoning deltas, tool blocks, turn ends.
func randomSession(rng *rand.Rand, n int) []protocol.Event {
	var evs []protocol.Event
	seq := int64(0)
	h := func() protocol.Header { seq++; return protocol.Header{SessionID: "s", Seq: seq} }
	msg := 0
	for len(evs) < n {
		msg++
		id := fmt.Sprint("m", msg)
		evs = append(evs, protocol.AssistantMessageAdded{Header: h(), Message: protocol.Message{ID: id, Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}})
		blocks := 1 + rng.IntN(3)
		for b := range blocks {
			switch rng.IntN(3) {
			case 0, 1:
				kind := rng.IntN(2)
				for range 1 + rng.IntN(20) {
					chunk := fmt.Sprint(" w", rng.IntN(1000))
					if kind == 0 {
						evs = append(evs, protocol.AssistantContentUpdated{Header: h(), MessageID: id, BlockIndex: b, Chunk: chunk, Stage: protocol.StageStreaming})
					} else {
						evs = append(evs, protocol.AssistantReasoningUpdated{Header: h(), MessageID: id, BlockIndex: b, Chunk: chunk, Stage: protocol.StageStreaming, StartedAt: 1})
					}
				}
				if kind == 0 {
					evs = append(evs, protocol.AssistantContentUpdated{Header: h(), MessageID: id, BlockIndex: b, Stage: protocol.StageEnd})
				} else {
					evs = append(evs, protocol.AssistantReasoningUpdated{Header: h(), MessageID: id, BlockIndex: b, Stage: protocol.StageEnd, EndedAt: 2})
				}
			default:
				tid := fmt.Sprint("t", msg, b)
				evs = append(evs, protocol.ToolBlockUpdated{Header: h(), MessageID: id, BlockIndex: b, ToolID: tid, Name: "Bash", Stage: protocol.StageStart})
				for _, c := range []string{`{"comm`, `and":`, `"ls"}`} {
					evs = append(evs, protocol.ToolBlockUpdated{Header: h(), MessageID: id, BlockIndex: b, ToolID: tid, Name: "Bash", Stage: protocol.StageStreaming, ParametersChunk: c})
				}
				for k := range rng.IntN(6) {
					evs = append(evs, protocol.ToolBlockUpdated{Header: h(), MessageID: id, BlockIndex: b, ToolID: tid, Name: "Bash", Stage: protocol.StageRunning,
						Parameters: `{"command":"ls"}`, CompactParams: "ls", ResultChunk: fmt.Sprint("line", k, "\n"), ShortResult: fmt.Sprint("line", k)})
				}
				res, ok := "done\n", true
				evs = append(evs, protocol.ToolBlockUpdated{Header: h(), MessageID: id, BlockIndex: b, ToolID: tid, Name: "Bash", Stage: protocol.StageEnd,
					Parameters: `{"command":"ls"}`, CompactParams: "ls", Result: &res, ShortResult: "done", Success: &ok})
			}
		}
		evs = append(evs, protocol.TurnEnded{Header: h(), MessageID: id, StopReason: "end_turn"})
	}
	return evs
}

func TestOutboxWriteBlocksPastItsLimit(t *testing.T) {
	t.Parallel()
	o := newOutbox(-1, 10)
	ctx := context.Background()
	big := []byte(`{"jsonrpc":"2.0","id":1,"result":"0123456789"}`)
	if err := o.Write(ctx, big); err != nil {
		t.Fatal(err)
	}
	// The queue is over its limit and nothing drains it: the next Write
	// blocks until its context ends, and close unblocks it too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := o.Write(cctx, big); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write past the limit: %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Write(ctx, big) }()
	o.close()
	if err := <-done; !errors.Is(err, errOutboxClosed) {
		t.Fatalf("Write after close: %v", err)
	}
}

func TestOutboxDrainUnblocksWrite(t *testing.T) {
	t.Parallel()
	o, _, s := startOutbox(t, -1, 10)
	ctx := context.Background()
	for i := range 50 {
		msg := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"0123456789"}`, i))
		if err := o.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"0123456789"}`, i)
		if got := s.next(t); string(got) != want {
			t.Fatalf("message %d: %s", i, got)
		}
	}
}
