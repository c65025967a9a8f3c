package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/protocol"
)

// testLog connects to a fresh embedded server's stream.
func testLog(t *testing.T) *Log { return benchLog(t) }

func benchLog(t testing.TB) *Log {
	t.Helper()
	nc, err := nats.Connect(natstest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l, err := OpenLog(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	// A second node opening the same stream takes it as it is.
	if _, err := OpenLog(ctx, js); err != nil {
		t.Fatal(err)
	}
	return l
}

func chunk(session string, seq int64, text string) protocol.Event {
	return protocol.AssistantContentUpdated{
		Header:    protocol.Header{SessionID: session, Seq: seq},
		MessageID: "a1", BlockIndex: 0, Chunk: text, Stage: protocol.StageStreaming,
	}
}

// answer is a session's opening events, then n text deltas.
func answer(session string, n int) []protocol.Event {
	evs := []protocol.Event{
		protocol.UserMessageAdded{Header: protocol.Header{SessionID: session, Seq: 1},
			Message: protocol.Message{ID: "u1", Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "hi"}}}},
		protocol.AssistantMessageAdded{Header: protocol.Header{SessionID: session, Seq: 2},
			Message: protocol.Message{ID: "a1", Role: protocol.RoleAssistant}},
	}
	for i := range n {
		evs = append(evs, chunk(session, int64(3+i), fmt.Sprintf("w%d ", i)))
	}
	return evs
}

func appendAll(t *testing.T, w *Writer, evs []protocol.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := w.Append(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// collect follows the log after `after` until it has reached seq `until`.
func collect(t *testing.T, l *Log, session string, after, until int64) []protocol.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var got []protocol.Event
	done := errors.New("done")
	err := l.Follow(ctx, session, after, func(ev protocol.Event) error {
		got = append(got, ev)
		if ev.Head().Seq >= until {
			return done
		}
		return nil
	})
	if !errors.Is(err, done) {
		t.Fatalf("Follow: %v", err)
	}
	return got
}

func reduce(t *testing.T, snap protocol.Snapshot, evs []protocol.Event) protocol.Snapshot {
	t.Helper()
	l := protocol.NewList(snap)
	for _, ev := range evs {
		if err := l.Apply(ev); err != nil {
			t.Fatalf("apply seq %d: %v", ev.Head().Seq, err)
		}
	}
	return l.Snapshot()
}

func TestFollowCatchesUpThenTails(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "s1"
	evs := answer(s, 20)
	w, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, evs[:10]) // stored before the reader starts

	for _, after := range []int64{0, 4, 10} {
		t.Run(fmt.Sprint("after", after), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan protocol.Event, len(evs))
			followed := make(chan error, 1)
			go func() {
				followed <- l.Follow(ctx, s, after, func(ev protocol.Event) error { got <- ev; return nil })
			}()
			want := after + 1
			if want <= 10 {
				// The stored ones come first.
				for ; want <= 10; want++ {
					if ev := <-got; ev.Head().Seq != want {
						t.Fatalf("got seq %d, want %d", ev.Head().Seq, want)
					}
				}
			}
			cancel()
			if err := <-followed; !errors.Is(err, context.Canceled) {
				t.Fatalf("Follow after cancel: %v", err)
			}
		})
	}

	// A reader that starts now sees the stored events and then the live
	// ones, each once, in order.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan protocol.Event, len(evs))
	go l.Follow(ctx, s, 0, func(ev protocol.Event) error { got <- ev; return nil })
	for i := range 10 {
		if ev := <-got; ev.Head().Seq != int64(i+1) {
			t.Fatalf("catch-up: got seq %d, want %d", ev.Head().Seq, i+1)
		}
	}
	appendAll(t, w, evs[10:])
	var live []protocol.Event
	for range len(evs) - 10 {
		live = append(live, <-got)
	}
	for i, ev := range live {
		if ev.Head().Seq != int64(11+i) {
			t.Fatalf("live: got seq %d, want %d", ev.Head().Seq, 11+i)
		}
	}
	whole := reduce(t, protocol.Snapshot{}, evs)
	if got := reduce(t, reduce(t, protocol.Snapshot{}, evs[:10]), live); got.Messages[1].Blocks[0].Content != whole.Messages[1].Blocks[0].Content {
		t.Fatalf("reduced %q, want %q", got.Messages[1].Blocks[0].Content, whole.Messages[1].Blocks[0].Content)
	}
	pos, err := l.Last(t.Context(), s)
	if err != nil || pos.Seq != int64(len(evs)) || pos != w.Position() {
		t.Fatalf("Last = %+v, %v; writer at %+v", pos, err, w.Position())
	}
}

func TestMergedEventsKeepTheirRange(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "merged"
	evs := answer(s, 6) // seq 1..8
	var m protocol.Merger
	merged := evs[2]
	for _, ev := range evs[3:6] {
		var ok bool
		if merged, ok = m.Merge(merged, ev); !ok {
			t.Fatal("deltas of one block did not merge")
		}
	}
	logged := []protocol.Event{evs[0], evs[1], merged, evs[6], evs[7]}
	w, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, logged)
	got := collect(t, l, s, 0, 8)
	if len(got) != len(logged) || got[2].Head().From() != 3 || got[2].Head().Seq != 6 {
		t.Fatalf("got %d events, the merged one covering %d..%d", len(got), got[2].Head().From(), got[2].Head().Seq)
	}
	if a, b := reduce(t, protocol.Snapshot{}, got), reduce(t, protocol.Snapshot{}, evs); a.Messages[1].Blocks[0].Content != b.Messages[1].Blocks[0].Content || a.Seq != b.Seq {
		t.Fatalf("merged log reduces to %+v, want %+v", a, b)
	}
	// A reader holding seq 4 cannot use an event covering 3..6.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := l.Follow(ctx, s, 4, func(protocol.Event) error { return nil }); !errors.Is(err, ErrGap) {
		t.Fatalf("Follow after 4: %v, want ErrGap", err)
	}
}

func TestStaleWriterIsFenced(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "fenced"
	evs := answer(s, 4)
	old, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, old, evs[:3])

	// A new owner takes over where the log ends; the old one, which does
	// not know yet, tries to go on.
	cur, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	takeover := protocol.ErrorBlockAdded{Header: protocol.Header{SessionID: s, Seq: 4}, MessageID: "a1", BlockIndex: 1, Error: "interrupted"}
	if err := cur.Append(t.Context(), takeover); err != nil {
		t.Fatal(err)
	}
	if err := old.Append(t.Context(), evs[3]); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale writer's append with the same seq: %v, want ErrFenced", err)
	}
	if err := old.Append(t.Context(), chunk(s, 4, "x")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale writer's second try: %v, want ErrFenced", err)
	}

	// Two writers created at the same position: the first append wins.
	a, _ := l.Writer(t.Context(), s, 1)
	b, _ := l.Writer(t.Context(), s, 1)
	if err := a.Append(t.Context(), chunk(s, 5, "a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(t.Context(), chunk(s, 5, "b")); !errors.Is(err, ErrFenced) {
		t.Fatalf("second writer: %v, want ErrFenced", err)
	}
	got := collect(t, l, s, 0, 5)
	if len(got) != 5 || got[3].Method() != protocol.MethodErrorBlockAdded || got[4].(protocol.AssistantContentUpdated).Chunk != "a" {
		t.Fatalf("log holds %v", got)
	}
}

// TestStaleFenceFails: a node that took a lease and was paused before it
// fenced the log (its lease expired, another node took the session over
// and wrote) cannot fence the newer owner out when it resumes, whether the
// log ends with the newer owner's fence or with its events.
func TestStaleFenceFails(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "stalefence"
	evs := answer(s, 2)
	if _, err := l.Fence(t.Context(), s, 1); err != nil {
		t.Fatal(err)
	}
	// Epoch 3 fences; the paused holder of epoch 2 resumes.
	if _, err := l.Fence(t.Context(), s, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fence(t.Context(), s, 2); !errors.Is(err, ErrFenced) {
		t.Fatalf("a fence of epoch 2 after one of epoch 3: %v, want ErrFenced", err)
	}
	cur, err := l.Writer(t.Context(), s, 3)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, cur, evs)
	end := cur.Position()
	if _, err := l.Fence(t.Context(), s, 2); !errors.Is(err, ErrFenced) {
		t.Fatalf("a fence of epoch 2 after the events of epoch 3: %v, want ErrFenced", err)
	}
	if pos, err := l.Last(t.Context(), s); err != nil || pos != end {
		t.Fatalf("the log ends at %+v (%v), want %+v: the stale fence was appended", pos, err, end)
	}
	// The owner goes on; a newer one still fences it.
	if err := cur.Append(t.Context(), chunk(s, end.Seq+1, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fence(t.Context(), s, 4); err != nil {
		t.Fatal(err)
	}
}

// writerAt is a writer that believes the log ends at pos.
func writerAt(t *testing.T, l *Log, session string, pos Position) *Writer {
	t.Helper()
	w, err := l.Writer(t.Context(), session, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.pos = pos
	return w
}

func TestRetriedAppendIsStoredOnce(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "retry"
	evs := answer(s, 2)
	w, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, evs[:3])
	before := w.Position()
	if err := w.Append(t.Context(), evs[3]); err != nil {
		t.Fatal(err)
	}
	// The same publish again, as after an ack lost in transit: the
	// message id makes it a no-op that succeeds.
	retry := writerAt(t, l, s, before)
	if err := retry.Append(t.Context(), evs[3]); err != nil {
		t.Fatalf("retried append: %v", err)
	}
	if retry.Position() != w.Position() {
		t.Fatalf("retry at %+v, first at %+v", retry.Position(), w.Position())
	}
	// The same seq with other content is another owner's: fenced.
	other := writerAt(t, l, s, before)
	if err := other.Append(t.Context(), chunk(s, 4, "other")); !errors.Is(err, ErrFenced) {
		t.Fatalf("same id, other content: %v, want ErrFenced", err)
	}
	info, err := l.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 4 {
		t.Fatalf("stream holds %d messages, want 4", info.State.Msgs)
	}
}

// TestAppendAfterAnAttemptGivenUp: the answer to a publish the writer
// stopped waiting for arrives later; the next appends must not take it
// for theirs.
func TestAppendAfterAnAttemptGivenUp(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "given-up"
	evs := answer(s, 4) // seq 1..6
	w := writerAt(t, l, s, Position{})
	appendAll(t, w, evs[:3])
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	// Published, but its answer is not waited for.
	if err := w.Append(gone, evs[3]); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a cancelled context: %v", err)
	}
	appendAll(t, w, evs[3:]) // the retry, then the next events
	last, err := l.Last(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if w.Position() != last {
		t.Fatalf("writer at %+v, the log ends at %+v", w.Position(), last)
	}
	if got := collect(t, l, s, 0, 6); len(got) != 6 {
		t.Fatalf("log holds %d events, want 6", len(got))
	}
}

// TestAppendWithoutTheStream: with no stream to store it, the server
// answers the publish at once that nobody took it.
func TestAppendWithoutTheStream(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "no-stream"
	w := writerAt(t, l, s, Position{})
	if err := l.js.DeleteStream(t.Context(), StreamName); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(t.Context(), answer(s, 0)[0]); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("append without a stream: %v, want nats.ErrNoResponders", err)
	}
}

func TestTrimKeepsWhatACheckpointDoesNotCover(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "trim"
	evs := answer(s, 8) // seq 1..10
	w, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, evs[:6])
	checkpoint := w.Position() // a checkpoint at seq 6 covers what is before
	appendAll(t, w, evs[6:])
	if err := l.Trim(t.Context(), s, checkpoint.Stream, 1); err != nil {
		t.Fatal(err)
	}
	// A reader at the checkpoint gets the rest.
	if got := collect(t, l, s, 5, 10); got[0].Head().Seq != 6 || len(got) != 5 {
		t.Fatalf("after 5: %d events from seq %d", len(got), got[0].Head().Seq)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := l.Follow(ctx, s, 2, func(protocol.Event) error { return nil }); !errors.Is(err, ErrGap) {
		t.Fatalf("Follow after 2: %v, want ErrGap", err)
	}
	// From wherever the log starts.
	if got := collect(t, l, s, -1, 10); got[0].Head().Seq != 6 || len(got) != 5 {
		t.Fatalf("from the start: %d events from seq %d", len(got), got[0].Head().Seq)
	}
	// Trimming everything keeps the last message, which fences writers.
	if err := l.Trim(t.Context(), s, w.Position().Stream+1, 1); err != nil {
		t.Fatal(err)
	}
	if pos, err := l.Last(t.Context(), s); err != nil || pos != w.Position() {
		t.Fatalf("Last after trimming all = %+v, %v; want %+v", pos, err, w.Position())
	}
}

// TestStaleTrimFails: once a newer owner fenced the log, the trim of an
// owner that lost its lease without noticing fails and drops nothing.
func TestStaleTrimFails(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	const s = "staletrim"
	w, err := l.Writer(t.Context(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, answer(s, 4))
	if _, err := l.Fence(t.Context(), s, 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Trim(t.Context(), s, w.Position().Stream, 1); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale owner's trim: %v, want ErrFenced", err)
	}
	if got := collect(t, l, s, 0, 6); len(got) != 6 {
		t.Fatalf("the log holds %d events after a stale trim, want 6", len(got))
	}
	if err := l.Trim(t.Context(), s, w.Position().Stream, 2); err != nil {
		t.Fatalf("the owner's trim: %v", err)
	}
}

func TestSessionIDsMustBeSubjectTokens(t *testing.T) {
	t.Parallel()
	l := testLog(t)
	for _, id := range []string{"", "a.b", "a*", "a>", "a b"} {
		if _, err := l.Writer(t.Context(), id, 1); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Writer(%q): %v, want ErrBadSessionID", id, err)
		}
	}
}

// TestFollowsPastTheServersDefaultConsumerLimit: nats-server allows 1,000
// consumers per stream unless the stream names its own limit, and a
// cluster follows more sessions than that at once, each with a consumer
// of its session's subject. The server here has a default of 5, for a
// quick test of the same rule.
func TestFollowsPastTheServersDefaultConsumerLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("jetstream { limits { default_max_consumers: 5 } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := natstest.StartConfig(conf, filepath.Join(dir, "js"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Shutdown()
		s.WaitForShutdown()
	}()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := l.stream.CreateConsumer(t.Context(), jetstream.ConsumerConfig{
			FilterSubject: Subject(fmt.Sprintf("s%d", i)), AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Minute,
		}); err != nil {
			t.Fatalf("consumer %d: %v", i+1, err)
		}
	}
}
