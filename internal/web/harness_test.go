package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

// The rpc server hands a WebSocket each event with its notification, so
// that the outbox does not decode it again.
var _ rpc.EventWriter = (*wsConn)(nil)

// testTimeout guards every wait of these tests; none of them decides
// correctness by time.
const testTimeout = 60 * time.Second

// stack is a whole `sluice serve` in process: the rpc server over agent
// sessions on provider, the web server, and a real listener on 127.0.0.1
// whose connections a test can cut.
type stack struct {
	rpc   *rpc.Server
	web   *Server
	http  *http.Server
	ln    *dropListener
	token string
	base  string // http://127.0.0.1:PORT: the browsers'
	// goBase is a second listener of the same server, for the tests' Go
	// clients, so that cutting the browsers' connections spares them.
	goBase string
	store  store.Store
}

type stackOptions struct {
	window   time.Duration
	mode     protocol.PermissionMode
	maxMsg   int
	queued   int
	workDir  string
	storeDir string
	// subagents gives the sessions the Agent tool.
	subagents bool
	// model names the sessions' model.
	model string
}

func newStack(t testing.TB, provider model.Provider, so stackOptions) *stack {
	t.Helper()
	if so.workDir == "" {
		so.workDir = t.TempDir()
	}
	if so.storeDir == "" {
		so.storeDir = t.TempDir()
	}
	st := store.NewJSONL(so.storeDir)
	rs := rpc.NewServer(rpc.Options{
		NewSession: func(ctx context.Context, cfg rpc.SessionConfig) (agent.Options, error) {
			opts := agent.Options{Provider: provider, Stream: modeltest.StreamOptions(), PermissionMode: so.mode, Model: so.model}
			if so.subagents {
				opts.Subagents = []agent.Subagent{}
			}
			return opts, nil
		},
		Store:           st,
		WorkDir:         so.workDir,
		MaxMessageBytes: so.maxMsg,
	})
	token := NewToken()
	ws, err := New(Options{Token: token, RPC: rs, Window: so.window, MaxMessageBytes: so.maxMsg, maxQueuedBytes: so.queued})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &dropListener{Listener: inner, conns: map[net.Conn]struct{}{}}
	goLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ws, ReadHeaderTimeout: 10 * time.Second}
	var served sync.WaitGroup
	for _, l := range []net.Listener{ln, goLn} {
		served.Add(1)
		go func() {
			defer served.Done()
			hs.Serve(l)
		}()
	}
	s := &stack{rpc: rs, web: ws, http: hs, ln: ln, token: token, store: st,
		base: "http://" + inner.Addr().String(), goBase: "http://" + goLn.Addr().String()}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		hs.Shutdown(ctx)
		ws.Close()
		rs.Close()
		served.Wait()
	})
	return s
}

// pageURL is what `sluice serve` prints.
func (s *stack) pageURL() string { return s.base + "/?token=" + url.QueryEscape(s.token) }

// wsURL is the WebSocket URL for Go clients.
func (s *stack) wsURL() string {
	return "ws" + s.goBase[len("http"):] + "/ws?token=" + url.QueryEscape(s.token)
}

// dropListener remembers its connections so that a test can cut them all,
// as a network failure would.
// While paused, connections wait before they are served, as they would
// behind a network that is down.
type dropListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	paused chan struct{} // non-nil while paused; closed by resume
}

func (l *dropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	wait := l.paused
	l.mu.Unlock()
	if wait != nil {
		<-wait
	}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return &trackedConn{Conn: c, l: l}, nil
}

// cut closes every open connection and holds new ones until resume.
func (l *dropListener) cut() int {
	l.mu.Lock()
	if l.paused == nil {
		l.paused = make(chan struct{})
	}
	l.mu.Unlock()
	return l.dropAll()
}

// resume serves the connections held since cut.
func (l *dropListener) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused != nil {
		close(l.paused)
		l.paused = nil
	}
}

// Close also releases a held connection, so that the server can stop.
func (l *dropListener) Close() error {
	l.resume()
	return l.Listener.Close()
}

// dropAll closes every open connection.
func (l *dropListener) dropAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.conns)
	for c := range l.conns {
		c.Close()
		delete(l.conns, c)
	}
	return n
}

type trackedConn struct {
	net.Conn
	l *dropListener
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c.Conn)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// client is a Go host on the WebSocket: JSON-RPC requests, and the
// notifications kept in arrival order.
type client struct {
	t    *testing.T
	c    *websocket.Conn
	next int

	mu      sync.Mutex
	cond    *sync.Cond
	notes   []note
	replies map[int]json.RawMessage
	errs    map[int]*wire.Error
	orphans []*wire.Error // errors answering messages whose id was unreadable
	err     error         // why reading ended
}

type note struct {
	Method string
	Params json.RawMessage
}

func dial(t *testing.T, ctx context.Context, wsURL string, header http.Header) *client {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(-1)
	cl := &client{t: t, c: c, replies: map[int]json.RawMessage{}, errs: map[int]*wire.Error{}}
	cl.cond = sync.NewCond(&cl.mu)
	go cl.read(ctx)
	t.Cleanup(func() { c.CloseNow() })
	return cl
}

func (cl *client) read(ctx context.Context) {
	for {
		_, data, err := cl.c.Read(ctx)
		cl.mu.Lock()
		if err != nil {
			cl.err = err
			cl.cond.Broadcast()
			cl.mu.Unlock()
			return
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *wire.Error     `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil {
			cl.err = fmt.Errorf("not JSON: %q", data)
		} else if m.ID == nil && m.Error != nil {
			cl.orphans = append(cl.orphans, m.Error)
		} else if m.ID == nil {
			cl.notes = append(cl.notes, note{m.Method, m.Params})
		} else if m.Error != nil {
			cl.errs[*m.ID] = m.Error
		} else {
			cl.replies[*m.ID] = m.Result
		}
		cl.cond.Broadcast()
		cl.mu.Unlock()
	}
}

// send sends a request and returns its id.
func (cl *client) send(ctx context.Context, method string, params any) int {
	cl.t.Helper()
	cl.mu.Lock()
	cl.next++
	id := cl.next
	cl.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.c.Write(ctx, websocket.MessageText, msg); err != nil {
		cl.t.Fatalf("%s: %v", method, err)
	}
	return id
}

// call sends a request and waits for its answer, decoded into result.
func (cl *client) call(ctx context.Context, method string, params, result any) error {
	cl.t.Helper()
	id := cl.send(ctx, method, params)
	raw, rerr := cl.wait(id)
	if rerr != nil {
		return rerr
	}
	if result != nil {
		return json.Unmarshal(raw, result)
	}
	return nil
}

func (cl *client) wait(id int) (json.RawMessage, error) {
	deadline := time.AfterFunc(testTimeout, func() {
		cl.mu.Lock()
		cl.err = errors.New("timed out")
		cl.cond.Broadcast()
		cl.mu.Unlock()
	})
	defer deadline.Stop()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for {
		if r, ok := cl.replies[id]; ok {
			return r, nil
		}
		if e, ok := cl.errs[id]; ok {
			return nil, e
		}
		if cl.err != nil {
			return nil, fmt.Errorf("no answer to request %d: %w", id, cl.err)
		}
		cl.cond.Wait()
	}
}

// waitNotes waits until ok holds for the notifications received so far.
func (cl *client) waitNotes(ok func([]note) bool) []note {
	cl.t.Helper()
	deadline := time.AfterFunc(testTimeout, func() {
		cl.mu.Lock()
		cl.err = errors.New("timed out")
		cl.cond.Broadcast()
		cl.mu.Unlock()
	})
	defer deadline.Stop()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for !ok(cl.notes) {
		if cl.err != nil {
			cl.t.Fatalf("waiting for notifications: %v (have %d)", cl.err, len(cl.notes))
		}
		cl.cond.Wait()
	}
	return append([]note(nil), cl.notes...)
}

// idleIn reports whether notes hold a runStateChanged idle event.
func idleIn(notes []note) bool {
	for _, n := range notes {
		if n.Method == protocol.MethodRunStateChanged {
			var p protocol.RunStateChanged
			if json.Unmarshal(n.Params, &p) == nil && p.State == protocol.RunIdle {
				return true
			}
		}
	}
	return false
}

// requireBrowser says whether a missing browser fails the test (CI sets
// SLUICE_REQUIRE_BROWSER=1) rather than skipping it.
func requireBrowser() bool { return os.Getenv("SLUICE_REQUIRE_BROWSER") != "" }
