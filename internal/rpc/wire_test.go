package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

// TestMain removes the binary the tests built (package testbin), if any.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { testbin.Cleanup() }))
}

// guard bounds every wait of a test: it only turns a hang into a failure.
const guard = 60 * time.Second

// testServer is a server on a scripted provider and a temporary store.
type testServer struct {
	t      *testing.T
	srv    *rpc.Server
	script *modeltest.Script
	store  store.Store
	dir    string
	mod    func(*agent.Options)
}

func newTestServer(t *testing.T, script *modeltest.Script, st store.Store, mod func(*agent.Options)) *testServer {
	t.Helper()
	return newTestServerIn(t, t.TempDir(), script, st, mod)
}

func newTestServerIn(t *testing.T, dir string, script *modeltest.Script, st store.Store, mod func(*agent.Options)) *testServer {
	t.Helper()
	ts := &testServer{t: t, script: script, store: st, dir: dir, mod: mod}
	ts.srv = rpc.NewServer(rpc.Options{
		NewSession: func(ctx context.Context, cfg rpc.SessionConfig) (agent.Options, error) {
			o := agent.Options{Provider: script, Stream: modeltest.StreamOptions(), WorkDir: ts.dir, AutoCompact: -1}
			if ts.mod != nil {
				ts.mod(&o)
			}
			return o, nil
		},
		Store:   st,
		WorkDir: ts.dir,
		Version: "test",
	})
	t.Cleanup(func() {
		if err := ts.srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return ts
}

// msg is one message from the server.
type msg struct {
	raw    []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

func (m msg) isResponse() bool { return m.Method == "" }

// rawHost is a raw host: it writes request lines and reads what the server
// writes, keeping a message list with the shared reducer.
type rawHost struct {
	t      *testing.T
	conn   *wire.LineConn
	served chan error
	nextID int

	mu      sync.Mutex
	queue   []msg
	readErr error
	notify  chan struct{}
	reading sync.Once

	list      *protocol.List
	events    []protocol.Event
	sessions  []string
	responses map[string]msg // read while waiting for something else
}

// dial connects a wire to the server. The wire starts reading at its
// first wait.
func (ts *testServer) dial(maxMessage int) *rawHost {
	t := ts.t
	srvSide, hostSide := rpctest.Pipe(maxMessage)
	w := &rawHost{t: t, conn: hostSide, served: make(chan error, 1), notify: make(chan struct{}, 1)}
	go func() { w.served <- ts.srv.ServeConn(context.Background(), srvSide) }()
	t.Cleanup(func() {
		w.conn.Close()
		select {
		case <-w.served:
		case <-time.After(guard):
			t.Errorf("ServeConn did not return after the host closed")
		}
	})
	return w
}

func (w *rawHost) startReading() {
	w.reading.Do(func() {
		go func() {
			for {
				line, err := w.conn.Read(context.Background())
				w.mu.Lock()
				if err != nil {
					w.readErr = err
					w.mu.Unlock()
					w.wake()
					return
				}
				var m msg
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					w.readErr = fmt.Errorf("server wrote a line that is not JSON: %q: %v", line, jerr)
				}
				m.raw = line
				w.queue = append(w.queue, m)
				w.mu.Unlock()
				w.wake()
			}
		}()
	})
}

func (w *rawHost) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// next returns the next message from the server.
func (w *rawHost) next() msg {
	w.t.Helper()
	w.startReading()
	deadline := time.After(guard)
	for {
		w.mu.Lock()
		if w.readErr != nil && len(w.queue) == 0 {
			err := w.readErr
			w.mu.Unlock()
			w.t.Fatalf("read: %v", err)
		}
		if len(w.queue) > 0 {
			m := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return m
		}
		w.mu.Unlock()
		select {
		case <-w.notify:
		case <-deadline:
			w.t.Fatalf("no message from the server within %v", guard)
		}
	}
}

func (w *rawHost) send(line string) {
	w.t.Helper()
	if err := w.conn.Write(context.Background(), []byte(line)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// call sends a request and returns its id.
func (w *rawHost) call(method string, params any) int {
	w.t.Helper()
	w.nextID++
	req := map[string]any{"jsonrpc": "2.0", "id": w.nextID, "method": method}
	if params != nil {
		req["params"] = params
	}
	data, err := json.Marshal(req)
	if err != nil {
		w.t.Fatal(err)
	}
	w.send(string(data))
	return w.nextID
}

// handle applies a notification to the wire's list.
func (w *rawHost) handle(m msg) protocol.Event {
	w.t.Helper()
	ev, err := protocol.Decode(m.Method, m.Params)
	if err != nil {
		w.t.Fatalf("undecodable notification %s: %v", m.raw, err)
	}
	w.events = append(w.events, ev)
	if w.list != nil {
		if err := w.list.Apply(ev); err != nil && !errors.Is(err, protocol.ErrStale) {
			w.t.Fatalf("host list cannot apply %s: %v", m.raw, err)
		}
	}
	return ev
}

// response reads until the answer to id, handling the notifications met.
func (w *rawHost) response(id int) msg {
	w.t.Helper()
	key := fmt.Sprint(id)
	if m, ok := w.responses[key]; ok {
		delete(w.responses, key)
		return m
	}
	for {
		m := w.next()
		if !m.isResponse() {
			w.handle(m)
			continue
		}
		if string(m.ID) != key {
			// The answer to an earlier call whose place among the
			// messages is not fixed (sendMessage): keep it for later.
			if w.responses == nil {
				w.responses = map[string]msg{}
			}
			w.responses[string(m.ID)] = m
			continue
		}
		return m
	}
}

// result calls and decodes a successful result into v.
func (w *rawHost) result(method string, params, v any) {
	w.t.Helper()
	m := w.response(w.call(method, params))
	if m.Error != nil {
		w.t.Fatalf("%s: %s", method, m.raw)
	}
	if v != nil {
		if err := json.Unmarshal(m.Result, v); err != nil {
			w.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// initialize attaches the wire to a session and resets its list.
func (w *rawHost) initialize(p wire.InitializeParams) wire.InitializeResult {
	w.t.Helper()
	var res wire.InitializeResult
	w.result("initialize", p, &res)
	if res.Snapshot != nil {
		w.list = protocol.NewList(*res.Snapshot)
	} else if w.list == nil {
		w.t.Fatalf("resumed without a list: %+v", res)
	}
	w.sessions = append(w.sessions, res.SessionID)
	return res
}

// until reads notifications until one satisfies ok.
func (w *rawHost) until(ok func(protocol.Event) bool) protocol.Event {
	w.t.Helper()
	for {
		m := w.next()
		if m.isResponse() {
			if w.responses == nil {
				w.responses = map[string]msg{}
			}
			w.responses[string(m.ID)] = m
			continue
		}
		if ev := w.handle(m); ok(ev) {
			return ev
		}
	}
}

func isIdle(ev protocol.Event) bool {
	rs, ok := ev.(protocol.RunStateChanged)
	return ok && rs.State == protocol.RunIdle
}

func isMethod(method string) func(protocol.Event) bool {
	return func(ev protocol.Event) bool { return ev.Method() == method }
}

// messages pulls a snapshot and checks that the wire's list equals it.
func (w *rawHost) checkList() protocol.Snapshot {
	w.t.Helper()
	var snap protocol.Snapshot
	w.result("getMessages", map[string]any{}, &snap)
	w.list.Reset(snap)
	return snap
}

// equalLists compares a host's list with a snapshot.
func equalLists(t *testing.T, got, want protocol.Snapshot) {
	t.Helper()
	if got.Seq != want.Seq || !reflect.DeepEqual(jsonOf(t, got.Messages), jsonOf(t, want.Messages)) {
		t.Fatalf("host list differs from getMessages\n got seq %d %s\nwant seq %d %s", got.Seq, jsonOf(t, got.Messages), want.Seq, jsonOf(t, want.Messages))
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runToIdle sends a message and reads until the session is idle again.
func (w *rawHost) runToIdle(text string) string {
	w.t.Helper()
	start := len(w.events)
	var res wire.SendMessageResult
	w.result("sendMessage", map[string]any{"text": text}, &res)
	// The answer and the run's events race: the run may have ended
	// before the answer came.
	for _, ev := range w.events[start:] {
		if isIdle(ev) {
			return res.MessageID
		}
	}
	w.until(isIdle)
	return res.MessageID
}

func methods(evs []protocol.Event) string {
	var out []string
	for _, ev := range evs {
		if n := len(out); n > 0 && out[n-1] == ev.Method() {
			continue
		}
		out = append(out, ev.Method())
	}
	return strings.Join(out, " ")
}
