package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// testNode is one node of an in-process cluster: its own NATS connection
// and database pool, like a process of its own.
type testNode struct {
	*Node
	nc *nats.Conn
	pg *pgstore.Store
	p  *modeltest.Script
}

func startNode(t testing.TB, id, url, dsn string, p *modeltest.Script, configure ...func(*Config)) *testNode {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(id))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{nc: nc, pg: pg, p: p}
	cfg := Config{
		NodeID: id, NATS: nc, Leases: PG(pg), LeaseTTL: 3 * time.Second,
		Options: func(_ context.Context, dir string) (agent.Options, error) { return tn.options(dir), nil },
	}
	for _, c := range configure {
		c(&cfg)
	}
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn.Node = n
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close node %s: %v", id, err)
		}
		nc.Close()
		pg.Close()
	})
	return tn
}

func (tn *testNode) options(dir string) agent.Options {
	return agent.Options{Provider: tn.p, Store: tn.pg, WorkDir: dir, Stream: modeltest.StreamOptions()}
}

func (tn *testNode) open(t testing.TB, id string) session.Session {
	t.Helper()
	h, err := tn.Open(t.Context(), id, func(dir string) (agent.Options, error) { return tn.options(dir), nil })
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// follow reduces what sub delivers onto snap until the session is idle at
// or after seq min, checking that seq never skips or repeats.
func follow(t *testing.T, snap protocol.Snapshot, sub session.Subscription, min int64) protocol.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := protocol.NewList(snap)
	for l.Seq() < min || l.Running() {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("at seq %d: %v", l.Seq(), err)
		}
		if err := l.Apply(ev); err != nil {
			t.Fatalf("event covering %d..%d at seq %d: %v", ev.Head().From(), ev.Head().Seq, l.Seq(), err)
		}
	}
	return l.Snapshot()
}

func TestCommandsFromAnyNodeReachTheOwner(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	a := startNode(t, "a", url, dsn, modeltest.NewScript(
		modeltest.Answer("m1", "Hello ", "from ", "a"),
		modeltest.Answer("m2", "once"),
	))
	b := startNode(t, "b", url, dsn, modeltest.NewScript(modeltest.Answer("m3", "b goes on")))

	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	id := ha.ID()
	hb := b.open(t, id)
	if got := hb.Owner(); got != "a" {
		t.Fatalf("owner seen from b = %q, want a", got)
	}
	if hb.WorkDir() != dir {
		t.Fatalf("b describes the session in %q, want %q", hb.WorkDir(), dir)
	}
	snap, sub := hb.SnapshotAndSubscribe()
	defer sub.Close()
	if _, err := hb.Submit(t.Context(), "hi", false); err != nil {
		t.Fatal(err)
	}
	got := follow(t, snap, sub, 1)
	if text := got.Messages[1].Text(); text != "Hello from a" {
		t.Fatalf("b's client reduced %q", text)
	}
	// The owner's state, b's mirror and b's client agree.
	for _, s := range []session.Session{ha, hb} {
		if err := waitSeq(t, s, got.Seq); err != nil {
			t.Fatal(err)
		}
		if m := s.Messages(); !reflect.DeepEqual(m.Messages, got.Messages) || m.Seq != got.Seq {
			t.Fatalf("getMessages %+v, client %+v", m, got)
		}
	}

	// The end of the run checkpointed the state the clients hold.
	firstRun := checkpointAt(t, b, id, got)

	// A command sent twice with one request id runs once.
	c, _ := json.Marshal(command{ID: "req-1", Method: cmdSubmit, Text: "once"})
	var first, second *nats.Msg
	if first, err = b.nc.Request(commandSubject(id), c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if second, err = b.nc.Request(commandSubject(id), c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != string(second.Data) {
		t.Fatalf("answers differ: %s / %s", first.Data, second.Data)
	}
	got = follow(t, got, sub, got.Seq+1)
	if n := len(got.Messages); n != 4 {
		t.Fatalf("%d messages after the repeated command, want 4", n)
	}
	// The second checkpoint trimmed the log up to the first: a reader from
	// the start finds a gap, one from the first checkpoint does not.
	// The owner trims after it has saved the checkpoint, so the trim may
	// still be on its way when the checkpoint is seen: a reader that
	// finds no gap (it tails until its context ends) tries again.
	checkpointAt(t, b, id, got)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := b.elog.Follow(ctx, id, 0, func(protocol.Event) error { return nil })
		cancel()
		if errors.Is(err, ErrGap) {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			t.Fatalf("reading the trimmed log from seq 0: %v", err)
		}
	}
	// A node that opens the session now starts from the last checkpoint,
	// and still serves a client resuming from the first one: the log's
	// events before the checkpoint are in its mirror's replay buffer.
	third := startNode(t, "c", url, dsn, modeltest.NewScript())
	hc := third.open(t, id)
	resumed, err := hc.SubscribeFrom(firstRun.Seq)
	if err != nil {
		t.Fatalf("resuming on a new node from seq %d: %v", firstRun.Seq, err)
	}
	defer resumed.Close()
	if again := follow(t, firstRun, resumed, got.Seq); !reflect.DeepEqual(again.Messages, got.Messages) {
		t.Fatalf("resumed on c: %+v, want %+v", again, got)
	}

	// a stops (releasing its lease): the next command from b makes b the
	// owner, and seq goes on.
	if err := ha.Close(); err != nil {
		t.Fatal(err)
	}
	before := got.Seq
	if _, err := hb.Submit(t.Context(), "and now?", false); err != nil {
		t.Fatal(err)
	}
	got = follow(t, got, sub, before+1)
	if hb.Owner() != "b" {
		t.Fatalf("owner after a stopped = %q", hb.Owner())
	}
	if text := got.Messages[len(got.Messages)-1].Text(); text != "b goes on" {
		t.Fatalf("last answer %q", text)
	}
	if b.p.Count() != 1 {
		t.Fatalf("b's model got %d requests", b.p.Count())
	}
	// b's model was sent the whole conversation, from the store.
	if msgs := b.p.Request(0).Messages; len(msgs) != 5 || msgs[0].Role != model.RoleUser {
		t.Fatalf("b's model was sent %+v", msgs)
	}
}

// checkpointAt waits until session id's checkpoint is want (the owner
// checkpoints just after publishing the end of a run).
func checkpointAt(t *testing.T, n *testNode, id string, want protocol.Snapshot) protocol.Snapshot {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		snap, err := n.checkpoint(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Seq == want.Seq {
			a, _ := json.Marshal(snap)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				t.Fatalf("checkpoint %s, clients hold %s", a, b)
			}
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint at seq %d, want %d", snap.Seq, want.Seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitSeq waits until s holds seq (a mirror applies the log as it comes).
func waitSeq(t *testing.T, s session.Session, seq int64) error {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.Seq() < seq {
		if time.Now().After(deadline) {
			return errors.New("mirror never reached the seq")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// TestNodesRunOnlySessionsWhoseDirectoryTheySee: the working-directory
// rule. A node refuses to start a session in a directory it does not have,
// and does not take over one whose directory it does not see, even with
// the lease free: it keeps mirroring it.
func TestNodesRunOnlySessionsWhoseDirectoryTheySee(t *testing.T) {
	t.Parallel()
	url, dsn := natstest.URL(t), pgtest.DSN(t)
	a := startNode(t, "a", url, dsn, modeltest.NewScript())
	b := startNode(t, "b", url, dsn, modeltest.NewScript())
	if _, err := a.New(t.Context(), a.options(filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Fatal("a started a session in a directory it does not have")
	}
	dir := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID()).(*handle)
	if err := ha.Close(); err != nil { // the lease is free now
		t.Fatal(err)
	}
	if err := os.Rename(dir, dir+".gone"); err != nil { // b no longer sees it
		t.Fatal(err)
	}
	took, err := hb.tryTakeErr(t.Context())
	if took || err != nil {
		t.Fatalf("b took a session whose directory it cannot see: %v, %v", took, err)
	}
	if owner := b.Owner(t.Context(), ha.ID()); owner != "" {
		t.Fatalf("owner %q", owner)
	}
	if err := os.Rename(dir+".gone", dir); err != nil {
		t.Fatal(err)
	}
	if took, err := hb.tryTakeErr(t.Context()); !took || err != nil {
		t.Fatalf("b did not take the session once it sees its directory: %v, %v", took, err)
	}
	if owner := b.Owner(t.Context(), ha.ID()); owner != "b" {
		t.Fatalf("owner %q, want b", owner)
	}
}

// TestOwnerCutOffFromTheDatabaseStops: a node that cannot renew its lease
// for a whole TTL stops running the session (another node may have taken
// it by then) and mirrors it; the next command, from another node, makes
// that node the owner, and seq goes on.
func TestOwnerCutOffFromTheDatabaseStops(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	a := startNode(t, "a", url, dsn, modeltest.NewScript(modeltest.Answer("m1", "from a")))
	b := startNode(t, "b", url, dsn, modeltest.NewScript(modeltest.Answer("m2", "from b")))
	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID())
	snap, sub := hb.SnapshotAndSubscribe()
	defer sub.Close()
	if _, err := hb.Submit(t.Context(), "one", false); err != nil {
		t.Fatal(err)
	}
	got := follow(t, snap, sub, 1)

	a.pg.Close() // a can no longer renew its lease
	deadline := time.Now().Add(time.Minute)
	for ha.(*handle).owner() != nil {
		if time.Now().After(deadline) {
			t.Fatal("a still runs the session a minute after losing the database")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := hb.Submit(t.Context(), "two", false); err != nil {
		t.Fatal(err)
	}
	got = follow(t, got, sub, got.Seq+1)
	if hb.Owner() != "b" || got.Messages[len(got.Messages)-1].Text() != "from b" {
		t.Fatalf("owner %q, last answer %q", hb.Owner(), got.Messages[len(got.Messages)-1].Text())
	}
}

// TestForwardedCommandsChangeEveryNodesView: rewind, bang and clear sent
// on a node that does not run the session are run by the owner; their
// answers carry the seq their events reach, which the asking node's
// mirror then holds.
func TestForwardedCommandsChangeEveryNodesView(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	a := startNode(t, "a", url, dsn, modeltest.NewScript(modeltest.Answer("m1", "first")))
	b := startNode(t, "b", url, dsn, modeltest.NewScript())
	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID())
	id, err := hb.Submit(t.Context(), "one", false)
	if err != nil {
		t.Fatal(err)
	}
	snap, sub := hb.SnapshotAndSubscribe()
	defer sub.Close()
	follow(t, snap, sub, 1)

	seq, err := hb.Rewind(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitSeq(t, hb, seq); err != nil {
		t.Fatal(err)
	}
	if n := len(hb.Messages().Messages); n != 0 {
		t.Fatalf("%d messages after rewinding to the first", n)
	}

	job, err := hb.SubmitBang(t.Context(), "echo forwarded")
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := waitSeq(t, hb, res.Seq); err != nil {
		t.Fatal(err)
	}
	msgs := hb.Messages().Messages
	if len(msgs) != 1 || msgs[0].ID != res.MessageID || !strings.Contains(msgs[0].Blocks[len(msgs[0].Blocks)-1].Result, "forwarded") {
		t.Fatalf("after the bang: %+v", msgs)
	}

	seq, err = hb.Clear(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := waitSeq(t, hb, seq); err != nil {
		t.Fatal(err)
	}
	for _, s := range []session.Session{ha, hb} {
		if err := waitSeq(t, s, seq); err != nil {
			t.Fatal(err)
		}
		if n := len(s.Messages().Messages); n != 0 {
			t.Fatalf("%d messages after clear", n)
		}
	}
}

// heldCheckpoints holds every checkpoint until release is closed, and
// says on saving when one is waiting.
type heldCheckpoints struct {
	Leases
	saving  chan int64
	release chan struct{}
}

func (l heldCheckpoints) SaveCheckpoint(ctx context.Context, lease Lease, snapshot json.RawMessage, seq int64) error {
	select {
	case l.saving <- seq:
	default:
	}
	// Not even the caller's timeout ends the wait: a publisher that
	// waited for checkpoints would then wait for release, which the test
	// gives only once the run reached its client.
	<-l.release
	return l.Leases.SaveCheckpoint(ctx, lease, snapshot, seq)
}

// TestEventsDoNotWaitForACheckpoint: while the database is slow to save a
// checkpoint, the run's events still reach the clients; the checkpoint of
// the run's end is saved after the one held.
func TestEventsDoNotWaitForACheckpoint(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	held := heldCheckpoints{saving: make(chan int64, 1), release: make(chan struct{})}
	a := startNode(t, "a", url, dsn, modeltest.NewScript(modeltest.Answer("m1", "one ", "two ", "three ", "four")),
		func(c *Config) {
			held.Leases = c.Leases
			c.Leases = held
			c.CheckpointEvery = 2
		})
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the node closes, which waits for its checkpoints
	h, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	snap, sub := h.SnapshotAndSubscribe()
	defer sub.Close()
	if _, err := h.Submit(t.Context(), "hi", false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.saving:
	case <-time.After(time.Minute):
		t.Fatal("no checkpoint was asked for")
	}
	// The whole run reaches the client while that checkpoint waits.
	got := follow(t, snap, sub, 1)
	if text := got.Messages[len(got.Messages)-1].Text(); text != "one two three four" {
		t.Fatalf("the client reduced %q", text)
	}
	release()
	checkpointAt(t, a, h.ID(), got)
}

// TestLeavingOwnerAnswersMoved: a command that reaches a node while it
// leaves a session (its lease lost, or closing) is answered "moved" —
// also when it was already waiting in the subscription's queue — so its
// asker tries again at once instead of waiting out a request timeout.
func TestLeavingOwnerAnswersMoved(t *testing.T) {
	t.Parallel()
	nc, err := nats.Connect(natstest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	o := &owned{replies: map[string][]byte{}}
	held := make(chan struct{})
	first := true
	o.cmds, err = nc.Subscribe("sluice.cmd.leaving", func(msg *nats.Msg) {
		if first { // hold the queue while the node leaves
			first = false
			<-held
		}
		o.serve(msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	replies := make(chan *nats.Msg, 2)
	for range 2 {
		inbox := nats.NewInbox()
		if _, err := nc.ChanSubscribe(inbox, replies); err != nil {
			t.Fatal(err)
		}
		if err := nc.PublishRequest("sluice.cmd.leaving", inbox, []byte(`{"method":"abort"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	o.leave()
	close(held)
	for i := range 2 {
		var msg *nats.Msg
		select {
		case msg = <-replies:
		case <-time.After(2 * time.Minute): // generous: an answer comes at once
			t.Fatalf("command %d was not answered", i+1)
		}
		var r commandReply
		if err := json.Unmarshal(msg.Data, &r); err != nil || !r.Moved {
			t.Fatalf("reply %+v (%v), want moved", r, err)
		}
	}
}

// TestCutRunEndsNamingItsCause: an owner cut off from the database mid-
// answer stops writing; the node that adopts the session ends the run
// visibly — an error block naming the lost lease and its node, the turn
// ended, then idle — without waiting for a client's command.
func TestCutRunEndsNamingItsCause(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	never := make(chan struct{})
	a := startNode(t, "a", url, dsn, modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"), modeltest.Text(0, "half an"), modeltest.Gate(never))))
	b := startNode(t, "b", url, dsn, modeltest.NewScript())
	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID())
	snap, sub := hb.SnapshotAndSubscribe()
	defer sub.Close()
	if _, err := hb.Submit(t.Context(), "q", false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := protocol.NewList(snap)
	var ends []string
	next := func() protocol.Event {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("at seq %d: %v", l.Seq(), err)
		}
		if err := l.Apply(ev); err != nil {
			t.Fatalf("%s at seq %d: %v", ev.Method(), l.Seq(), err)
		}
		switch ev.(type) {
		case protocol.ErrorBlockAdded, protocol.TurnEnded:
			ends = append(ends, ev.Method())
		case protocol.RunStateChanged:
			if !l.Running() {
				ends = append(ends, ev.Method())
			}
		}
		return ev
	}
	shown := func() bool {
		ms := l.Snapshot().Messages
		return len(ms) > 0 && ms[len(ms)-1].Text() == "half an"
	}
	for !shown() {
		next()
	}

	a.pg.Close() // a can no longer renew its lease
	for l.Running() {
		next()
	}
	got := l.Snapshot()
	m := got.Messages[len(got.Messages)-1]
	last := m.Blocks[len(m.Blocks)-1]
	if last.Type != protocol.BlockError || !strings.Contains(last.Content, "lease was lost: node a stopped holding it") {
		t.Fatalf("the cut answer ends with %+v, want an error block naming the lost lease of node a", last)
	}
	if m.StopReason != agent.StopInterrupted {
		t.Fatalf("the cut turn's stop reason is %q, want %q", m.StopReason, agent.StopInterrupted)
	}
	if want := []string{protocol.MethodErrorBlockAdded, protocol.MethodTurnEnded, protocol.MethodRunStateChanged}; !slices.Equal(ends, want) {
		t.Fatalf("the run ended with %v, want %v", ends, want)
	}
	if hb.Owner() != "b" {
		t.Fatalf("owner %q after the takeover, want b", hb.Owner())
	}
}

// TestStaleMetaWriteFails: a session's description in the bucket is fenced
// by epoch. Once a newer owner wrote it, the older owner's write fails
// with ErrFenced (it was paused past the TTL and resumed), and the entry
// stays the newer owner's; the newer owner goes on writing.
func TestStaleMetaWriteFails(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	a := startNode(t, "a", url, dsn, modeltest.NewScript())
	b := startNode(t, "b", url, dsn, modeltest.NewScript())
	h, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	id, old := h.ID(), h.(*handle).owner().currentLease().Epoch
	m, err := b.loadMeta(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	newer := m
	newer.Node, newer.Running = "b", true
	if err := b.putMeta(t.Context(), id, newer, old+1); err != nil {
		t.Fatal(err)
	}
	stale := m
	stale.Node, stale.Running = "a", false
	if err := a.putMeta(t.Context(), id, stale, old); !errors.Is(err, ErrFenced) {
		t.Fatalf("the older owner's write: %v, want ErrFenced", err)
	}
	if got, err := a.loadMeta(t.Context(), id); err != nil || got.Node != "b" || !got.Running || got.Epoch != old+1 {
		t.Fatalf("the entry is %+v (%v), want the newer owner's", got, err)
	}
	newer.Running = false
	if err := b.putMeta(t.Context(), id, newer, old+1); err != nil {
		t.Fatalf("the newer owner's next write: %v", err)
	}
}

// readOnly is a store whose logs take no write: a look at what a store
// holds through agent.Open, which would otherwise end the cut run in it.
type readOnly struct{ store.Store }

func (r readOnly) Open(context.Context, store.Key) (store.Log, error) { return discard{}, nil }

type discard struct{}

func (discard) Append(context.Context, ...json.RawMessage) error { return nil }
func (discard) Close() error                                     { return nil }

// storedTexts is the text of each message of session id as PostgreSQL's
// copy of it rebuilds them.
func storedTexts(t *testing.T, dsn, dir, id string) []string {
	t.Helper()
	pg, err := pgstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	s, err := agent.Open(agent.Options{Provider: modeltest.NewScript(), Store: readOnly{pg}, WorkDir: dir}, id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for _, m := range s.Messages().Messages {
		out = append(out, m.Text())
	}
	return out
}

// TestPostgresCatchesUpAfterAnOutage: the records the owner could not
// write while PostgreSQL was down are written once it is back, by the same
// owner, without a takeover: PostgreSQL's copy of the session says what
// the clients were shown while the answer still streams, and the run ends
// saved.
func TestPostgresCatchesUpAfterAnOutage(t *testing.T) {
	t.Parallel()
	pg := pgtest.Own(t)
	url, dsn, dir := natstest.URL(t), pg.DSN(t), t.TempDir()
	delta := func(s string) []modeltest.Step {
		return []modeltest.Step{{Part: model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: s}}}
	}
	down, back, end := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := startNode(t, "a", url, dsn, modeltest.NewScript(modeltest.Response(modeltest.Start("m1"),
		[]modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Block: model.BlockText}}}, delta("Before, "),
		modeltest.Gate(down), delta("during the outage, "), modeltest.Gate(back), delta("after."),
		modeltest.Gate(end), modeltest.Stop("end_turn"))),
		// Long enough that the outage costs no lease: the same node owns
		// the session throughout.
		func(c *Config) { c.LeaseTTL = time.Minute })
	h, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	snap, sub := h.SnapshotAndSubscribe()
	defer sub.Close()
	if _, err := h.Submit(t.Context(), "q", false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := protocol.NewList(snap)
	until := func(text string) {
		for {
			ms := l.Snapshot().Messages
			if len(ms) > 0 && ms[len(ms)-1].Text() == text {
				return
			}
			ev, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("at seq %d: %v", l.Seq(), err)
			}
			if err := l.Apply(ev); err != nil {
				t.Fatalf("%s at seq %d: %v", ev.Method(), l.Seq(), err)
			}
		}
	}
	until("Before, ")
	pg.Stop()
	close(down)
	until("Before, during the outage, ")
	// The journal's writes fail while the server is down (it writes
	// every 50 ms); the outage lasts a few of them.
	time.Sleep(time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	close(back)
	until("Before, during the outage, after.")
	want := []string{"q", "Before, during the outage, after."}
	var got []string
	// A bound for the wait, far past the journal's retry pace.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if got = storedTexts(t, dsn, dir, h.ID()); slices.Equal(got, want) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the journal's retry comes at its own pace
	}
	if !slices.Equal(got, want) {
		t.Fatalf("PostgreSQL's copy holds %q while the answer streams, want %q", got, want)
	}
	if owner := h.Owner(); owner != "a" {
		t.Fatalf("owner %q, want a: the outage must not cost the lease", owner)
	}
	close(end)
	for l.Running() || l.Seq() < 1 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("at seq %d: %v", l.Seq(), err)
		}
		if err := l.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	final := l.Snapshot().Messages
	last := final[len(final)-1].Blocks
	if b := last[len(last)-1]; b.Type == protocol.BlockError {
		t.Fatalf("the run ended with an error block %q: it was saved once PostgreSQL was back", b.Content)
	}
	if got := storedTexts(t, dsn, dir, h.ID()); !slices.Equal(got, want) {
		t.Fatalf("PostgreSQL's copy after the run holds %q, want %q", got, want)
	}
}

// TestMessageJobFromAnotherNode: a message sent from a node that does not
// run the session, images attached, is answered by a Job with what its run
// ended with, as on the owner.
func TestMessageJobFromAnotherNode(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	script := modeltest.NewScript(modeltest.Answer("m1", "A ", "red dot"))
	a := startNode(t, "a", url, dsn, script)
	b := startNode(t, "b", url, dsn, modeltest.NewScript())

	ha, err := a.New(t.Context(), a.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID())
	png := agent.Image{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}
	id, job, err := hb.SubmitMessage(t.Context(), "what is this?", png)
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-job.Done():
	default:
		t.Fatal("Wait returned before Done was closed")
	}
	// The run's statistics travel with its answer.
	if res.MessageID != id || res.Text != "A red dot" || res.StopReason != "end_turn" || res.Dropped || res.Seq == 0 || res.Turns != 1 || res.APIDuration <= 0 {
		t.Fatalf("job ended with %+v, want message %s answered", res, id)
	}
	var images int
	for _, m := range script.Request(0).Messages {
		for _, c := range m.Content {
			if c.Type == model.ContentImage {
				images++
			}
		}
	}
	if images != 1 {
		t.Fatalf("the owner's model was sent %d images, want 1", images)
	}
}

// TestInterruptAndThinkingFromAnotherNode: a node that does not run the
// session lists its subagent kinds (they travel with its description),
// sets the owner's thinking budget and interrupts the owner's run, after
// which the message queued behind it still runs.
func TestInterruptAndThinkingFromAnotherNode(t *testing.T) {
	t.Parallel()
	url, dsn, dir := natstest.URL(t), pgtest.DSN(t), t.TempDir()
	gate := make(chan struct{})
	script := modeltest.NewScript(
		modeltest.Response([]modeltest.Step{{Gate: gate}}, modeltest.Answer("m1", "first")),
		modeltest.Answer("m2", "second"),
	)
	a := startNode(t, "a", url, dsn, script)
	b := startNode(t, "b", url, dsn, modeltest.NewScript())
	opts := a.options(dir)
	opts.Subagents = []agent.Subagent{{Name: "reviewer", Description: "Reviews code.", Model: "haiku"}}
	ha, err := a.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	hb := b.open(t, ha.ID())
	if subs := hb.Subagents(); len(subs) != 2 || subs[1] != (session.Subagent{Name: "reviewer", Description: "Reviews code.", Model: "haiku"}) {
		t.Fatalf("another node lists the subagents %+v", subs)
	}

	_, sub := hb.SnapshotAndSubscribe()
	defer sub.Close()
	firstID, first, err := hb.SubmitMessage(t.Context(), "one")
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := ev.(protocol.UserMessageAdded); ok && u.Message.ID == firstID {
			break
		}
	}
	// The owner publishes the user message before it asks the model: an
	// interrupt before the request would cut nothing the gate holds.
	for script.Count() < 1 {
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond): // polls the owner's model
		}
	}
	secondID, second, err := hb.SubmitMessage(t.Context(), "two")
	if err != nil {
		t.Fatal(err)
	}
	if err := hb.SetThinkingBudget(t.Context(), 2048); err != nil {
		t.Fatal(err)
	}
	if err := hb.Interrupt(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if _, err := first.Wait(t.Context()); err == nil {
		t.Fatal("the interrupted run ended without an error")
	}
	res, err := second.Wait(t.Context())
	if err != nil || res.Dropped || res.MessageID != secondID || res.Text != "second" {
		t.Fatalf("the queued message after the interrupt: %+v, %v", res, err)
	}
	if got := script.Request(script.Count() - 1).ThinkingBudget; got != 2048 {
		t.Fatalf("the owner's next request has thinking budget %d, want 2048", got)
	}
}
