package client

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// server runs an in-process server on a scripted provider.
func server(t *testing.T, dir string, script *modeltest.Script, st store.Store) *rpc.Server {
	t.Helper()
	srv := rpc.NewServer(rpc.Options{
		NewSession: func(ctx context.Context, cfg rpc.SessionConfig) (agent.Options, error) {
			return agent.Options{Provider: script, Stream: modeltest.StreamOptions(), AutoCompact: -1}, nil
		},
		Store: st, WorkDir: dir,
	})
	t.Cleanup(func() { srv.Close() })
	return srv
}

// connect serves a new connection and returns a client on it; wrap, when
// set, wraps the client's side (fault injection).
func connect(t *testing.T, srv *rpc.Server, wrap func(wire.Conn) wire.Conn) *Client {
	t.Helper()
	srvSide, hostSide := rpctest.Pipe(0)
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeConn(context.Background(), srvSide)
	}()
	var conn wire.Conn = hostSide
	if wrap != nil {
		conn = wrap(conn)
	}
	c := New(conn, Options{})
	t.Cleanup(func() {
		c.Close()
		<-served
	})
	return c
}

// sameAsServer checks the host's list against getMessages.
func sameAsServer(t *testing.T, s *Session) {
	t.Helper()
	host := s.Messages()
	srv, err := s.GetMessages(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(host)
	g, _ := json.Marshal(srv)
	if string(h) != string(g) {
		t.Fatalf("host list differs from getMessages\nhost %s\n srv %s", h, g)
	}
}

// follow reads the session's updates on a goroutine, answering permission
// requests with allow, until the test ends.
func follow(t *testing.T, s *Session) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			u, err := s.Next(ctx)
			if err != nil {
				return
			}
			if pr, ok := u.Event.(protocol.PermissionRequest); ok {
				go s.AnswerPermission(ctx, pr.RequestID, protocol.DecisionAllow)
			}
		}
	}()
}

func TestDriveAToolSessionEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := store.NewJSONL(t.TempDir())
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me look."), modeltest.ToolUse(1, "t1", "Bash", map[string]any{"command": "echo from-the-tool"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "The tool ", "said hi."),
		modeltest.Answer("m3", "Second answer."),
		modeltest.Answer("sum", "Summary of it all."),
		modeltest.Answer("m4", "After restore."),
	)
	srv := server(t, dir, script, st)
	c := connect(t, srv, nil)
	sess, err := c.Initialize(bg(t), wire.InitializeParams{PermissionMode: "default"})
	if err != nil {
		t.Fatal(err)
	}
	follow(t, sess)
	first, err := sess.Run(bg(t), "use the tool")
	if err != nil {
		t.Fatal(err)
	}
	msgs := sess.Messages().Messages
	if len(msgs) != 3 || msgs[1].Blocks[1].Type != protocol.BlockTool || !strings.Contains(msgs[1].Blocks[1].Result, "from-the-tool") {
		t.Fatalf("after the tool run: %+v", msgs)
	}
	sameAsServer(t, sess)
	second, err := sess.Run(bg(t), "again")
	if err != nil {
		t.Fatal(err)
	}
	sameAsServer(t, sess)

	// A refused rewind truncates nothing.
	res, err := sess.Rewind(bg(t), "no-such-id")
	if err != nil || res.OK || res.Error == "" {
		t.Fatalf("refused rewind: %+v %v", res, err)
	}
	if n := len(sess.Messages().Messages); n != 5 {
		t.Fatalf("%d messages after a refused rewind", n)
	}
	// A rewind: the list is cut by messagesRewound, before the receipt.
	res, err = sess.Rewind(bg(t), second)
	if err != nil || !res.OK {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	if n := len(sess.Messages().Messages); n != 3 {
		t.Fatalf("%d messages after the rewind", n)
	}
	sameAsServer(t, sess)

	// Compaction appends the summary; no list is pushed.
	if err := sess.Compact(bg(t)); err != nil {
		t.Fatal(err)
	}
	msgs = sess.Messages().Messages
	if len(msgs) != 4 || msgs[3].Blocks[0].Type != protocol.BlockCompact {
		t.Fatalf("after compaction: %+v", msgs)
	}
	sameAsServer(t, sess)
	before := sess.Messages()

	// Kill the connection and the server; a new server restores it.
	c.Close()
	srv.Close()
	srv2 := server(t, dir, script, st)
	c2 := connect(t, srv2, nil)
	infos, err := c2.ListSessions(bg(t), "")
	if err != nil || len(infos) != 1 || infos[0].ID != sess.ID() {
		t.Fatalf("listSessions: %+v %v", infos, err)
	}
	restored, err := c2.RestoreSession(bg(t), sess.ID(), "")
	if err != nil {
		t.Fatal(err)
	}
	follow(t, restored)
	got, _ := json.Marshal(restored.Messages().Messages)
	want, _ := json.Marshal(before.Messages)
	if string(got) != string(want) {
		t.Fatalf("restored list\n got %s\nwant %s", got, want)
	}
	if _, err := restored.Run(bg(t), "still there?"); err != nil {
		t.Fatal(err)
	}
	sameAsServer(t, restored)
	if restored.Messages().Messages[0].ID != first {
		t.Fatalf("first message lost")
	}
}

// faulty drops or corrupts the notifications that match.
type faulty struct {
	wire.Conn
	mu     sync.Mutex
	count  int
	action func(n int, line []byte) []byte // nil: drop
	hit    chan struct{}                   // closed after the third matching line
}

func (f *faulty) Read(ctx context.Context) ([]byte, error) {
	for {
		line, err := f.Conn.Read(ctx)
		if err != nil || !strings.Contains(string(line), `"method":"assistantContentUpdated"`) {
			return line, err
		}
		f.mu.Lock()
		f.count++
		n := f.count
		f.mu.Unlock()
		out := f.action(n, line)
		if n == 3 {
			close(f.hit)
		}
		if out != nil {
			return out, nil
		}
	}
}

func TestListHealsItselfAfterLostOrBadEvents(t *testing.T) {
	t.Parallel()
	chunks := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	cases := map[string]func(n int, line []byte) []byte{
		"lost delta": func(n int, line []byte) []byte {
			if n == 3 {
				return nil
			}
			return line
		},
		"event that does not fit": func(n int, line []byte) []byte {
			if n == 3 {
				return []byte(strings.Replace(string(line), `"blockIndex":0`, `"blockIndex":5`, 1))
			}
			return line
		},
	}
	for name, action := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Gates keep every chunk its own event, so that the fault hits
			// one chunk.
			var steps [][]modeltest.Step
			steps = append(steps, modeltest.Start("m1"), []modeltest.Step{{Part: startText()}})
			var gates []chan struct{}
			for _, ch := range chunks {
				g := make(chan struct{})
				gates = append(gates, g)
				steps = append(steps, modeltest.Gate(g), []modeltest.Step{{Part: textDelta(ch)}})
			}
			steps = append(steps, modeltest.Stop("end_turn"))
			srv := server(t, t.TempDir(), modeltest.NewScript(modeltest.Response(steps...)), nil)
			f := &faulty{action: action, hit: make(chan struct{})}
			c := connect(t, srv, func(conn wire.Conn) wire.Conn { f.Conn = conn; return f })
			sess, err := c.Initialize(bg(t), wire.InitializeParams{})
			if err != nil {
				t.Fatal(err)
			}
			// The test itself reads the updates: each gate opens once the
			// previous chunk has arrived (or the list was resynced).
			if _, err := sess.Send(bg(t), "go", false); err != nil {
				t.Fatal(err)
			}
			for i, g := range gates {
				close(g)
				if i == 2 {
					// The faulty chunk: a lost one shows only with the next.
					select {
					case <-f.hit:
					case <-bg(t).Done():
						t.Fatal("the fault never happened")
					}
					continue
				}
				if err := sess.waitFor(bg(t), func() bool {
					m := s0(sess.list)
					return m != nil && len(m.Blocks) == 1 && len(m.Blocks[0].Content) == i+1 && !sess.resyncing
				}); err != nil {
					t.Fatal(err)
				}
			}
			if err := sess.WaitIdle(bg(t), 0); err != nil {
				t.Fatal(err)
			}
			if sess.Resyncs() == 0 {
				t.Fatal("no resync happened")
			}
			if got := sess.Messages().Messages[1].Text(); got != strings.Join(chunks, "") {
				t.Fatalf("healed text %q", got)
			}
			sameAsServer(t, sess)
		})
	}
}

// s0 returns the assistant message of a one-turn list, or nil.
func s0(l *protocol.List) *protocol.Message {
	if l.Len() < 2 {
		return nil
	}
	m := l.At(1)
	return &m
}

func TestStaleReceiptIsIgnored(t *testing.T) {
	t.Parallel()
	// A fake server answers initialize, then answers the rewind with a
	// receipt for another request id.
	srvSide, hostSide := rpctest.Pipe(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := srvSide.Read(context.Background())
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal(line, &req)
			var result string
			switch req.Method {
			case "initialize":
				result = `{"sessionId":"s1","epoch":"e","snapshot":{"messages":[],"seq":0},"seq":0}`
			case "rewind":
				result = `{"requestId":"someone-else","ok":true}`
			}
			srvSide.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`))
		}
	}()
	c := New(hostSide, Options{})
	defer func() { c.Close(); srvSide.Close(); <-done }()
	sess, err := c.Initialize(bg(t), wire.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Rewind(bg(t), "x"); !errors.Is(err, ErrStaleReceipt) {
		t.Fatalf("mismatched receipt: %v", err)
	}
}

func startText() model.Part {
	return model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockText}
}

func textDelta(s string) model.Part {
	return model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: s}
}

func TestResumeReceivesExactlyTheMissedEvents(t *testing.T) {
	t.Parallel()
	srv := server(t, t.TempDir(), modeltest.NewScript(modeltest.Answer("m1", "one"), modeltest.Answer("m2", "t", "w", "o")), nil)
	c1 := connect(t, srv, nil)
	s1, err := c1.Initialize(bg(t), wire.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Run(bg(t), "first"); err != nil {
		t.Fatal(err)
	}
	kept, info := s1.Messages(), s1.Info()
	c1.Close()

	// The session moves on while the host is away.
	c2 := connect(t, srv, nil)
	s2, err := c2.Initialize(bg(t), wire.InitializeParams{SessionID: info.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Run(bg(t), "second"); err != nil {
		t.Fatal(err)
	}

	c3 := connect(t, srv, nil)
	s3, err := c3.Resume(bg(t), info.SessionID, info.Epoch, kept)
	if err != nil {
		t.Fatal(err)
	}
	if !s3.Info().Resumed {
		t.Fatalf("not resumed: %+v", s3.Info())
	}
	if err := s3.waitFor(bg(t), func() bool { return s3.list.Seq() == s2.Seq() }); err != nil {
		t.Fatal(err)
	}
	first, err := s3.Next(bg(t))
	if err != nil || first.Snapshot != nil || first.Event.Head().From() != kept.Seq+1 {
		t.Fatalf("first update after resume: %+v %v", first, err)
	}
	sameAsServer(t, s3)
	if s3.Resyncs() != 0 {
		t.Fatalf("%d resyncs", s3.Resyncs())
	}
}

// oldServer strips the message from compactBlockAdded notifications, as
// a server from before the summary travelled with its message sent them.
type oldServer struct{ wire.Conn }

func (o oldServer) Read(ctx context.Context) ([]byte, error) {
	line, err := o.Conn.Read(ctx)
	if err != nil || !strings.Contains(string(line), `"method":"compactBlockAdded"`) {
		return line, err
	}
	var n struct {
		JSONRPC string                     `json:"jsonrpc"`
		Method  string                     `json:"method"`
		Params  map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &n); err != nil {
		return nil, err
	}
	delete(n.Params, "message")
	return json.Marshal(n)
}

// TestCompactWithoutMessagePullsASnapshot: a compactBlockAdded without its
// message does not fit the list; the host pulls a snapshot, which holds the
// summary, instead of appending an empty message.
func TestCompactWithoutMessagePullsASnapshot(t *testing.T) {
	t.Parallel()
	srv := server(t, t.TempDir(), modeltest.NewScript(modeltest.Answer("m1", "first answer"), modeltest.Answer("m2", "The summary.")), nil)
	c := connect(t, srv, func(conn wire.Conn) wire.Conn { return oldServer{conn} })
	sess, err := c.Initialize(bg(t), wire.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Run(bg(t), "hello"); err != nil {
		t.Fatal(err)
	}
	if err := sess.Compact(bg(t)); err != nil {
		t.Fatal(err)
	}
	if err := sess.waitFor(bg(t), func() bool {
		n := sess.list.Len()
		return !sess.resyncing && n > 0 && slices.ContainsFunc(sess.list.At(n-1).Blocks, func(b protocol.Block) bool {
			return b.Type == protocol.BlockCompact && strings.Contains(b.Content, "The summary.")
		})
	}); err != nil {
		t.Fatal(err)
	}
	if sess.Resyncs() != 1 {
		t.Fatalf("%d resyncs, want 1", sess.Resyncs())
	}
	for _, m := range sess.Messages().Messages {
		if len(m.Blocks) == 0 || m.ID == "" {
			t.Fatalf("an empty message in the list: %+v", sess.Messages().Messages)
		}
	}
}
