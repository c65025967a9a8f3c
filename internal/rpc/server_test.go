package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

func TestInitializeSendAndSnapshot(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "Let", " me", " think"), modeltest.Text(1, "Hel", "lo", "!"), modeltest.Stop("end_turn")),
	), nil, nil)
	w := ts.dial(0)
	res := w.initialize(wire.InitializeParams{ClientInfo: &wire.Info{Name: "test"}})
	if res.SessionID == "" || res.Epoch == "" || res.ProtocolVersion != wire.ProtocolVersion || res.Snapshot == nil || res.Snapshot.Seq != 0 || len(res.Snapshot.Messages) != 0 {
		t.Fatalf("initialize result %+v", res)
	}
	if res.WorkingDirectory != ts.dir || res.PermissionMode != "default" || len(res.Tools) == 0 || !res.Capabilities.RewindReceipts {
		t.Fatalf("initialize result %+v", res)
	}
	// The raw result carries "messages": [] for an empty session, never null.
	w.send(`{"jsonrpc":"2.0","id":"raw","method":"getMessages","params":{}}`)
	m := w.next()
	if string(m.ID) != `"raw"` || !strings.Contains(string(m.Result), `"messages":[]`) {
		t.Fatalf("getMessages on an empty session: %s", m.raw)
	}

	w.runToIdle("Hi")
	if got := methods(w.events); got != "runStateChanged userMessageAdded assistantMessageAdded assistantReasoningUpdated assistantContentUpdated turnEnded runStateChanged" {
		t.Fatalf("notifications: %s", got)
	}
	for _, ev := range w.events {
		if ev.Head().SessionID != res.SessionID {
			t.Fatalf("notification of another session: %+v", ev)
		}
	}
	got := w.list.Snapshot()
	equalLists(t, got, w.checkList())
	if msgs := got.Messages; len(msgs) != 2 || msgs[1].Text() != "Hello!" || msgs[1].Blocks[0].Content != "Let me think" {
		t.Fatalf("list %s", jsonOf(t, got))
	}
}

func TestBadInputNeverKillsTheSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(modeltest.Answer("m1", "one"), modeltest.Answer("m2", "two")), nil, nil)
	w := ts.dial(1024)
	w.initialize(wire.InitializeParams{})
	w.runToIdle("first")

	cases := []struct {
		name, line string
		id         string
		code       int
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, "null", wire.CodeParseError},
		{"garbage", `hello`, "null", wire.CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"abort"}]`, "null", wire.CodeInvalidRequest},
		{"empty batch", `[]`, "null", wire.CodeInvalidRequest},
		{"scalar", `42`, "null", wire.CodeInvalidRequest},
		{"no jsonrpc", `{"id":7,"method":"abort"}`, "7", wire.CodeInvalidRequest},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":7,"method":"abort"}`, "7", wire.CodeInvalidRequest},
		{"numeric jsonrpc", `{"jsonrpc":2,"id":"s","method":"abort"}`, `"s"`, wire.CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"abort"}`, "null", wire.CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":8,"method":3}`, "8", wire.CodeInvalidRequest},
		{"no method", `{"jsonrpc":"2.0","id":8}`, "8", wire.CodeInvalidRequest},
		{"scalar params", `{"jsonrpc":"2.0","id":9,"method":"abort","params":3}`, "9", wire.CodeInvalidRequest},
		{"unknown method", `{"jsonrpc":"2.0","id":10,"method":"fly"}`, "10", wire.CodeMethodNotFound},
		{"positional params", `{"jsonrpc":"2.0","id":11,"method":"sendMessage","params":["hi"]}`, "11", wire.CodeInvalidParams},
		{"wrong param type", `{"jsonrpc":"2.0","id":12,"method":"sendMessage","params":{"text":5}}`, "12", wire.CodeInvalidParams},
		{"missing text", `{"jsonrpc":"2.0","id":13,"method":"sendMessage","params":{}}`, "13", wire.CodeInvalidParams},
		{"bad mode", `{"jsonrpc":"2.0","id":14,"method":"setPermissionMode","params":{"permissionMode":"yolo"}}`, "14", wire.CodeInvalidParams},
		{"bad decision", `{"jsonrpc":"2.0","id":15,"method":"permissionResponse","params":{"requestId":"x","decision":"maybe"}}`, "15", wire.CodeInvalidParams},
		{"unknown permission request", `{"jsonrpc":"2.0","id":16,"method":"permissionResponse","params":{"requestId":"x","decision":"allow"}}`, "16", wire.CodeRequestFailed},
		{"unknown session", `{"jsonrpc":"2.0","id":17,"method":"abort","params":{"sessionId":"nope"}}`, "17", wire.CodeSessionNotFound},
		{"oversize", `{"jsonrpc":"2.0","id":18,"method":"sendMessage","params":{"text":"` + strings.Repeat("x", 2000) + `"}}`, "null", wire.CodeInvalidRequest},
		{"restore unknown", `{"jsonrpc":"2.0","id":19,"method":"restoreSession","params":{"sessionId":"nope"}}`, "19", wire.CodeSessionNotFound},
		{"restore invalid id", `{"jsonrpc":"2.0","id":20,"method":"restoreSession","params":{"sessionId":"../x"}}`, "20", wire.CodeSessionNotFound},
	}
	for _, c := range cases {
		w.send(c.line)
		m := w.next()
		if string(m.ID) != c.id || m.Error == nil || m.Error.Code != c.code || m.Result != nil {
			t.Errorf("%s: got %s, want id %s code %d", c.name, m.raw, c.id, c.code)
		}
	}
	// Notifications (no id) get no answer, even when they fail; responses
	// from the host are ignored.
	w.send(`{"jsonrpc":"2.0","method":"fly"}`)
	w.send(`{"jsonrpc":"2.0","method":"abort","params":{}}`)
	w.send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	w.send("")
	w.send("  \r")
	// The session is intact and still works.
	w.runToIdle("second")
	snap := w.checkList()
	if len(snap.Messages) != 4 || snap.Messages[3].Text() != "two" {
		t.Fatalf("list after bad input: %s", jsonOf(t, snap))
	}
}

func TestOversizeLineIsSkippedWhole(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(), nil, nil)
	w := ts.dial(64)
	// A long line whose tail looks like a request: only one error, and the
	// tail is not read as a request.
	w.send(strings.Repeat(" ", 100) + `{"jsonrpc":"2.0","id":1,"method":"listSessions"}`)
	w.send(`{"jsonrpc":"2.0","id":2,"method":"listSessions"}`)
	if m := w.next(); string(m.ID) != "null" || m.Error == nil || !strings.Contains(m.Error.Message, "limit") {
		t.Fatalf("oversize: %s", m.raw)
	}
	if m := w.next(); string(m.ID) != "2" || m.Error != nil {
		t.Fatalf("after oversize: %s", m.raw)
	}
}

func TestEOFEndsTheConnectionCleanly(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(), nil, nil)
	w := ts.dial(0)
	w.initialize(wire.InitializeParams{})
	w.conn.Close()
	if err := <-w.served; err != nil {
		t.Fatalf("ServeConn after EOF: %v", err)
	}
	w.served <- nil // for the cleanup
}

func TestPermissionRoundTrip(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo approved"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "done"),
		modeltest.Response(modeltest.Start("m3"), modeltest.ToolUse(0, "t2", "Bash", map[string]any{"command": "echo denied"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m4", "ok"),
	), nil, nil)
	w := ts.dial(0)
	w.initialize(wire.InitializeParams{PermissionMode: "default"})
	w.call("sendMessage", map[string]any{"text": "run it"})
	for i, decision := range []protocol.Decision{"allow", "deny"} {
		pr := w.until(isMethod(protocol.MethodPermissionRequest)).(protocol.PermissionRequest)
		if pr.Name != "Bash" || pr.RequestID == "" || !strings.Contains(pr.Parameters, "echo") {
			t.Fatalf("permission request %+v", pr)
		}
		answerer := w
		if i == 0 {
			// A host that attaches now learns of the pending request from
			// its snapshot, and may answer it.
			late := ts.dial(0)
			r := late.initialize(wire.InitializeParams{SessionID: w.sessions[0]})
			if len(r.PendingPermissions) != 1 || r.PendingPermissions[0].RequestID != pr.RequestID {
				t.Fatalf("pending permissions on attach: %+v", r.PendingPermissions)
			}
			// The snapshot holds the same view state: the run and the
			// request, at the snapshot's seq.
			if snap := r.Snapshot; !r.Busy || !snap.Running || len(snap.PendingPermissions) != 1 ||
				snap.PendingPermissions[0] != pr || snap.Seq < pr.Seq {
				t.Fatalf("attach during a prompt: busy %v, snapshot running %v pending %+v at seq %d", r.Busy, snap.Running, snap.PendingPermissions, snap.Seq)
			}
			answerer = late
		}
		// The answer's response and the events it causes come in no fixed
		// order: the response is read after them, so that reading it
		// cannot consume the events waited for.
		answer := answerer.call("permissionResponse", map[string]any{"requestId": pr.RequestID, "decision": decision})
		res := w.until(isMethod(protocol.MethodPermissionResolved)).(protocol.PermissionResolved)
		if res.RequestID != pr.RequestID || res.Decision != decision {
			t.Fatalf("resolved %+v", res)
		}
		end := w.until(func(ev protocol.Event) bool {
			e, ok := ev.(protocol.ToolBlockUpdated)
			return ok && e.Stage == protocol.StageEnd
		}).(protocol.ToolBlockUpdated)
		if ok := end.Success != nil && *end.Success; ok != (decision == "allow") {
			t.Fatalf("tool end after %s: %+v", decision, end)
		}
		w.until(isIdle)
		if m := answerer.response(answer); m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("permissionResponse: %s", m.raw)
		}
		if i == 0 {
			w.call("sendMessage", map[string]any{"text": "again"})
		}
	}
	// The answer to the first sendMessage and the second came among the
	// events; the list is consistent.
	equalLists(t, w.list.Snapshot(), w.checkList())
}

func TestTwoConnectionsShareASessionAndResume(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(modeltest.Answer("m1", "a", "b", "c"), modeltest.Answer("m2", "d", "e")), nil, nil)
	a := ts.dial(0)
	res := a.initialize(wire.InitializeParams{})
	b := ts.dial(0)
	resB := b.initialize(wire.InitializeParams{SessionID: res.SessionID})
	if resB.SessionID != res.SessionID || resB.Epoch != res.Epoch || resB.Snapshot == nil {
		t.Fatalf("attach result %+v", resB)
	}
	a.runToIdle("one")
	b.until(isIdle)
	equalLists(t, b.list.Snapshot(), a.list.Snapshot())
	last := b.list.Seq()

	// b goes away; while it is gone the session moves on.
	b.conn.Close()
	<-b.served
	b.served <- nil
	a.runToIdle("two")

	// A new connection resuming from b's last seq receives exactly the
	// events after it, and no snapshot.
	c := ts.dial(0)
	c.list = protocol.NewList(b.list.Snapshot())
	resC := c.initialize(wire.InitializeParams{SessionID: res.SessionID, LastSeq: &last, Epoch: res.Epoch})
	if !resC.Resumed || resC.Snapshot != nil || resC.Seq != last {
		t.Fatalf("resume result %+v", resC)
	}
	c.until(isIdle)
	if first := c.events[0].Head(); first.From() != last+1 {
		t.Fatalf("resumed at %d, want %d", first.From(), last+1)
	}
	equalLists(t, c.list.Snapshot(), a.checkList())

	// A stale epoch or a seq the server does not have gets a snapshot.
	for _, p := range []wire.InitializeParams{
		{SessionID: res.SessionID, LastSeq: &last, Epoch: "other"},
		{SessionID: res.SessionID, LastSeq: new(int64(1 << 40))},
	} {
		d := ts.dial(0)
		r := d.initialize(p)
		if r.Resumed || r.Snapshot == nil || r.Snapshot.Seq != a.list.Seq() {
			t.Fatalf("initialize %+v: %+v", p, r)
		}
	}
}

func TestRewindReceipts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(modeltest.Answer("m1", "one"), modeltest.Answer("m2", "two"), modeltest.Answer("m3", "three")), nil, nil)
	w := ts.dial(0)
	res := w.initialize(wire.InitializeParams{})
	other := ts.dial(0)
	other.initialize(wire.InitializeParams{SessionID: res.SessionID})
	w.runToIdle("first")
	second := w.runToIdle("second")
	w.runToIdle("third")
	other.until(isIdle)
	other.until(isIdle)
	other.until(isIdle)
	before := w.checkList()

	// Refusals publish nothing and cut nothing.
	assistantID := before.Messages[1].ID
	for _, id := range []string{"no-such-message", assistantID} {
		var rr wire.RewindResult
		w.result("rewind", map[string]any{"messageId": id, "requestId": "r-bad"}, &rr)
		if rr.OK || rr.RequestID != "r-bad" || rr.Error == "" || rr.Snapshot != nil {
			t.Fatalf("rewind to %s: %+v", id, rr)
		}
	}
	equalLists(t, w.checkList(), before)

	// A receipt: the requester gets messagesRewound before it; no list
	// travels; every attached connection cuts its own copy.
	id := w.call("rewind", map[string]any{"messageId": second, "requestId": "r1"})
	ev := w.until(isMethod(protocol.MethodMessagesRewound)).(protocol.MessagesRewound)
	if ev.AnchorMessageID != second {
		t.Fatalf("rewound %+v", ev)
	}
	m := w.response(id)
	if string(m.Result) != `{"requestId":"r1","ok":true}` {
		t.Fatalf("receipt %s", m.raw)
	}
	if w.list.Len() != 2 {
		t.Fatalf("requester holds %d messages after the rewind", w.list.Len())
	}
	other.until(isMethod(protocol.MethodMessagesRewound))
	equalLists(t, other.list.Snapshot(), w.checkList())

	// Without a requestId the answer carries the whole list.
	var rr wire.RewindResult
	w.result("rewind", map[string]any{"messageId": before.Messages[0].ID}, &rr)
	if !rr.OK || rr.Snapshot == nil || len(rr.Snapshot.Messages) != 0 {
		t.Fatalf("legacy rewind %+v", rr)
	}
	w.list.Reset(*rr.Snapshot)
	equalLists(t, w.list.Snapshot(), w.checkList())
}

func TestGetMessagesMidStreamIsAnExactBoundary(t *testing.T) {
	t.Parallel()
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	ts := newTestServer(t, modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"),
		modeltest.Text(0, "one ", "two "), modeltest.Gate(gates[0]),
		modeltest.Text(1, "three ", "four "), modeltest.Gate(gates[1]),
		modeltest.Stop("end_turn"),
	)), nil, nil)
	w := ts.dial(0)
	w.initialize(wire.InitializeParams{})
	w.call("sendMessage", map[string]any{"text": "go"})
	for _, g := range gates {
		w.until(isMethod(protocol.MethodAssistantContentUpdated))
		snap := w.checkList()
		close(g)
		// The next notification continues the snapshot exactly (the wire
		// would fail on a gap or an overlap).
		ev := w.until(func(protocol.Event) bool { return true })
		if ev.Head().From() != snap.Seq+1 {
			t.Fatalf("after a snapshot at %d the next notification covers %d..%d", snap.Seq, ev.Head().From(), ev.Head().Seq)
		}
	}
	w.until(isIdle)
	equalLists(t, w.list.Snapshot(), w.checkList())
}

func TestSlowHostNeverBlocksTheSession(t *testing.T) {
	t.Parallel()
	chunks := make([]string, 2000)
	for i := range chunks {
		chunks[i] = strings.Repeat("x", 49) + "\n"
	}
	ts := newTestServer(t, modeltest.NewScript(modeltest.Answer("m1", chunks...)), nil, nil)
	slow := ts.dial(0)
	res := slow.initialize(wire.InitializeParams{})
	// The slow host reads nothing more for now (the pipe has no buffer, so
	// the server's writer blocks on the first event). A fast host on the
	// same session sees the run end.
	fast := ts.dial(0)
	fast.initialize(wire.InitializeParams{SessionID: res.SessionID})
	fast.runToIdle("stream")

	slow.until(isIdle)
	equalLists(t, slow.list.Snapshot(), fast.checkList())
	// The slow host's backlog was merged in its queue: far fewer
	// notifications than chunks, some carrying firstSeq.
	merged := 0
	for _, ev := range slow.events {
		if ev.Head().FirstSeq != 0 {
			merged++
		}
	}
	if merged == 0 || len(slow.events) >= len(chunks)/10 {
		t.Fatalf("slow host got %d notifications (%d merged) for %d chunks", len(slow.events), merged, len(chunks))
	}
}

func TestClearCompactBang(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(
		modeltest.Answer("m1", "one"),
		modeltest.Answer("sum", "The summary."),
		modeltest.Answer("m2", "two"),
	), nil, func(o *agent.Options) { o.PermissionMode = protocol.ModeBypassPermissions })
	w := ts.dial(0)
	w.initialize(wire.InitializeParams{})
	w.runToIdle("first")

	// compact: the summary message arrives as compactBlockAdded, before
	// the answer; no list is pushed.
	id := w.call("compact", map[string]any{})
	cb := w.until(isMethod(protocol.MethodCompactBlockAdded)).(protocol.CompactBlockAdded)
	if len(cb.Message.Blocks) != 1 || cb.Message.Blocks[0].Type != protocol.BlockCompact || cb.Message.Blocks[0].Content != "The summary." {
		t.Fatalf("compact block %+v", cb)
	}
	if m := w.response(id); m.Error != nil || string(m.Result) != "{}" {
		t.Fatalf("compact answer %s", m.raw)
	}
	if w.list.Len() != 3 {
		t.Fatalf("%d messages after compaction", w.list.Len())
	}

	// bang: a user message and a Bash block, answered after its end.
	id = w.call("bang", map[string]any{"command": "echo hello from bang"})
	var end protocol.ToolBlockUpdated
	for {
		m := w.next()
		if m.isResponse() {
			if string(m.ID) != jsonOf(t, id) || m.Error != nil {
				t.Fatalf("bang answer %s", m.raw)
			}
			if end.Stage != protocol.StageEnd {
				t.Fatalf("bang answered before its tool block ended")
			}
			break
		}
		if e, ok := w.handle(m).(protocol.ToolBlockUpdated); ok && e.Stage == protocol.StageEnd {
			end = e
		}
	}
	if end.Result == nil || !strings.Contains(*end.Result, "hello from bang") || end.Name != "Bash" {
		t.Fatalf("bang block %+v", end)
	}
	equalLists(t, w.list.Snapshot(), w.checkList())

	// clear: messagesCleared, then the answer with the (empty) snapshot
	// that the next events continue.
	id = w.call("clear", map[string]any{})
	w.until(isMethod(protocol.MethodMessagesCleared))
	m := w.response(id)
	var snap protocol.Snapshot
	if err := json.Unmarshal(m.Result, &snap); err != nil || len(snap.Messages) != 0 {
		t.Fatalf("clear answer %s", m.raw)
	}
	w.list.Reset(snap)
	w.runToIdle("after clear")
	equalLists(t, w.list.Snapshot(), w.checkList())
}

func TestRestoreAfterTheServerStops(t *testing.T) {
	t.Parallel()
	st := store.NewJSONL(t.TempDir())
	script := modeltest.NewScript(modeltest.Answer("m1", "persisted"), modeltest.Answer("m2", "after restore"))
	ts := newTestServer(t, script, st, nil)
	w := ts.dial(0)
	res := w.initialize(wire.InitializeParams{})
	w.runToIdle("remember me")
	before := w.checkList()
	w.conn.Close()
	if err := <-w.served; err != nil {
		t.Fatal(err)
	}
	w.served <- nil
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}

	ts2 := newTestServerIn(t, ts.dir, script, st, nil)
	w2 := ts2.dial(0)
	var list wire.ListSessionsResult
	w2.result("listSessions", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != res.SessionID || list.Sessions[0].Title != "remember me" || list.Sessions[0].Live {
		t.Fatalf("listSessions %+v", list)
	}
	var r wire.InitializeResult
	w2.result("restoreSession", map[string]any{"sessionId": res.SessionID}, &r)
	if r.Snapshot == nil || r.Epoch == res.Epoch || r.SessionID != res.SessionID {
		t.Fatalf("restore %+v", r)
	}
	if jsonOf(t, r.Snapshot.Messages) != jsonOf(t, before.Messages) {
		t.Fatalf("restored list\n got %s\nwant %s", jsonOf(t, r.Snapshot.Messages), jsonOf(t, before.Messages))
	}
	w2.list = protocol.NewList(*r.Snapshot)
	w2.runToIdle("and now?")
	equalLists(t, w2.list.Snapshot(), w2.checkList())
	w2.result("listSessions", map[string]any{}, &list)
	if len(list.Sessions) != 1 || !list.Sessions[0].Live {
		t.Fatalf("listSessions after restore %+v", list)
	}
}

func TestServeConnReturnsWhenCtxIsDone(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, modeltest.NewScript(), nil, nil)
	srvSide, hostSide := rpctest.Pipe(0)
	defer hostSide.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ts.srv.ServeConn(ctx, srvSide) }()
	// The server is attached and reading when ctx ends.
	if err := hostSide.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := hostSide.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("ServeConn after cancel: %v", err)
	}
}

// TestListSessionsNamesUsedSessions: a session opened and never used is not
// listed; a used one is, titled by its first prompt with that prompt's
// first line and its time — stored or only running.
func TestListSessionsNamesUsedSessions(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		var st store.Store
		if stored {
			st = store.NewJSONL(t.TempDir())
		}
		ts := newTestServer(t, modeltest.NewScript(modeltest.Answer("m1", "on it")), st, nil)
		empty, used := ts.dial(0), ts.dial(0)
		empty.initialize(wire.InitializeParams{})
		res := used.initialize(wire.InitializeParams{})
		used.runToIdle("\n  fix the build  \nthen run the tests")
		var list wire.ListSessionsResult
		ts.dial(0).result("listSessions", map[string]any{}, &list)
		if len(list.Sessions) != 1 {
			t.Fatalf("stored %v: listSessions %+v, want the used session only", stored, list)
		}
		s := list.Sessions[0]
		if s.ID != res.SessionID || s.FirstLine != "fix the build" || !strings.Contains(s.Title, "then run the tests") || s.Modified == 0 {
			t.Errorf("stored %v: listed %+v", stored, s)
		}
	}
}
