package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// host is a minimal host on one WebSocket, reading in the test's
// goroutine: it keeps a list with the reducer and fails on any event that
// does not follow exactly (a gap or a duplicate).
type host struct {
	t       *testing.T
	st      *stack
	conn    *websocket.Conn
	list    protocol.List
	session string
	epoch   string
	idle    bool
	nextID  int
	// resumes and snapshots count how each connection started.
	resumes, snapshots int
}

// connect opens a connection and initializes it: on the host's session
// after its seq when it has one.
func (h *host) connect(ctx context.Context) {
	h.t.Helper()
	c, _, err := websocket.Dial(ctx, h.st.wsURL(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	c.SetReadLimit(-1)
	h.conn = c
	params := map[string]any{}
	if h.session != "" {
		params["sessionId"] = h.session
		params["lastSeq"] = h.list.Seq()
		params["epoch"] = h.epoch
	}
	var res wire.InitializeResult
	h.request(ctx, "initialize", params, &res)
	h.session, h.epoch = res.SessionID, res.Epoch
	if res.Snapshot != nil {
		h.snapshots++
		h.list.Reset(*res.Snapshot)
	} else {
		h.resumes++
		if res.Seq != h.list.Seq() {
			h.t.Fatalf("resumed at %d, the host holds %d", res.Seq, h.list.Seq())
		}
	}
}

// request sends a request and reads until its answer, applying the
// notifications before it.
func (h *host) request(ctx context.Context, method string, params, result any) {
	h.t.Helper()
	h.nextID++
	id := h.nextID
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := h.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		h.t.Fatal(err)
	}
	for {
		raw := h.read(ctx)
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *wire.Error     `json:"error"`
		}
		json.Unmarshal(raw, &m)
		if m.ID == nil {
			h.apply(raw)
			continue
		}
		if *m.ID != id || m.Error != nil {
			h.t.Fatalf("%s: unexpected answer %s", method, raw)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				h.t.Fatal(err)
			}
		}
		return
	}
}

func (h *host) read(ctx context.Context) []byte {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	_, raw, err := h.conn.Read(ctx)
	if err != nil {
		h.t.Fatalf("read: %v", err)
	}
	return raw
}

// apply applies one notification: it must be exactly the next event.
func (h *host) apply(raw []byte) {
	h.t.Helper()
	ev, err := protocol.DecodeNotification(raw)
	if err != nil {
		h.t.Fatalf("notification %s: %v", raw, err)
	}
	if ev.Head().SessionID != h.session {
		return
	}
	if err := h.list.Apply(ev); err != nil {
		h.t.Fatalf("seq %d..%d on a list at %d: %v", ev.Head().From(), ev.Head().Seq, h.list.Seq(), err)
	}
	if rs, ok := ev.(protocol.RunStateChanged); ok {
		h.idle = rs.State == protocol.RunIdle
	}
}

// readUntil applies notifications until the list reaches seq (merged
// deltas may cover many seqs at once).
func (h *host) readUntil(ctx context.Context, seq int64) {
	for h.list.Seq() < seq {
		h.apply(h.read(ctx))
	}
}

// drop cuts the connection without a close handshake.
func (h *host) drop() { h.conn.CloseNow() }

// segmented is an answer of segs segments of n chunks, each segment
// waiting for its gate.
func segmented(segs, n int) ([]modeltest.Step, []chan struct{}, string) {
	steps := modeltest.Start("m1")
	steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockStart, Block: model.BlockText}})
	var gates []chan struct{}
	var text []byte
	for s := range segs {
		g := make(chan struct{})
		gates = append(gates, g)
		steps = append(steps, modeltest.Gate(g)...)
		for i := range n {
			chunk := fmt.Sprintf("s%02dc%04d ", s, i)
			text = append(text, chunk...)
			steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: chunk}})
		}
	}
	steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockStop}})
	return append(steps, modeltest.Stop(model.StopEndTurn)...), gates, string(text)
}

// TestResumeExactlyTheMissedEvents cuts a host's connection again and
// again while an answer streams, at random points, and resumes with
// initialize {sessionId, lastSeq, epoch}: every event arrives exactly once
// and in order (the reducer refuses a gap or a duplicate), and the host's
// list ends equal to getMessages.
func TestResumeExactlyTheMissedEvents(t *testing.T) {
	t.Parallel()
	steps, gates, text := segmented(12, 150)
	st := newStack(t, modeltest.NewScript(steps), stackOptions{})
	ctx := context.Background()
	h := &host{t: t, st: st}
	h.connect(ctx)
	var sent wire.SendMessageResult
	h.request(ctx, "sendMessage", map[string]any{"text": "go"}, &sent)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range gates {
		close(g)
		// Read part of what the segment publishes, then drop; the rest
		// comes from the replay buffer on the next connection.
		h.readUntil(ctx, h.list.Seq()+1+int64(rng.IntN(120)))
		h.drop()
		h.connect(ctx)
	}
	for !h.idle {
		h.apply(h.read(ctx))
	}
	var snap protocol.Snapshot
	h.request(ctx, "getMessages", map[string]any{}, &snap)
	want, _ := json.Marshal(snap)
	got, _ := json.Marshal(h.list.Snapshot())
	if string(want) != string(got) {
		t.Fatalf("host list differs from getMessages\nwant %s\ngot  %s", want, got)
	}
	if last := snap.Messages[len(snap.Messages)-1]; last.Text() != text {
		t.Fatalf("answer has %d bytes, want %d", len(last.Text()), len(text))
	}
	if h.resumes != len(gates) || h.snapshots != 1 {
		t.Errorf("%d resumes and %d snapshots, want %d and 1", h.resumes, h.snapshots, len(gates))
	}
}

// TestResumeTooFarBehindGetsASnapshot: a host away while more events were
// published than the replay buffer keeps gets a snapshot, and goes on
// from it without a gap.
func TestResumeTooFarBehindGetsASnapshot(t *testing.T) {
	t.Parallel()
	steps, gates, text := segmented(2, 9000)
	st := newStack(t, modeltest.NewScript(steps), stackOptions{})
	ctx := context.Background()
	h := &host{t: t, st: st}
	h.connect(ctx)
	h.request(ctx, "sendMessage", map[string]any{"text": "go"}, nil)
	h.readUntil(ctx, 3) // runStateChanged, userMessageAdded, assistantMessageAdded
	h.drop()
	// While the host is away, another host watches the first segment go by.
	w := &host{t: t, st: st, session: h.session, epoch: h.epoch}
	w.connect(ctx)
	close(gates[0])
	for !endsWith(&w.list, "s00c8999 ") {
		w.apply(w.read(ctx))
	}
	w.drop()
	h.connect(ctx)
	if h.snapshots != 2 {
		t.Fatalf("reconnecting after 9000 events: %d snapshots, want a second one", h.snapshots)
	}
	close(gates[1])
	for !h.idle {
		h.apply(h.read(ctx))
	}
	if got := h.list.At(h.list.Len() - 1).Text(); got != text {
		t.Fatalf("answer has %d bytes, want %d", len(got), len(text))
	}
}

func endsWith(l *protocol.List, tail string) bool {
	if l.Len() == 0 {
		return false
	}
	m := l.At(l.Len() - 1)
	txt := m.Text()
	return len(txt) >= len(tail) && txt[len(txt)-len(tail):] == tail
}
