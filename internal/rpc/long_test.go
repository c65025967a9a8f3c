package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// Figures of the long-session check (issue 4, item 4).
const (
	longHistory = 500       // messages before the long answer
	longAnswer  = 100 << 10 // bytes of the streamed answer
	// perEvent bounds what one notification adds to its payload: the
	// JSON-RPC envelope, the method, sessionId, messageId, seq, firstSeq,
	// blockIndex and stage (about 190 bytes with UUIDs).
	perEvent = 256
)

// meter is a client-side wire.Conn that records every line the server writes
// while recording is on.
type meter struct {
	wire.Conn
	mu        sync.Mutex
	recording bool
	lines     [][]byte
}

func (m *meter) Read(ctx context.Context) ([]byte, error) {
	line, err := m.Conn.Read(ctx)
	if err == nil {
		m.mu.Lock()
		if m.recording {
			m.lines = append(m.lines, bytes.Clone(line))
		}
		m.mu.Unlock()
	}
	return line, err
}

func (m *meter) record(on bool) [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recording = on
	lines := m.lines
	m.lines = nil
	return lines
}

// drain reads a session's updates so that the host's queue stays short.
func drain(t testing.TB, s *client.Session) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := s.Next(ctx); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// streamFigures checks the lines of one long answer: no notification
// carries a list, and the bytes from the first delta to the block's end
// stay within 1.3 × the answer plus perEvent per notification.
func streamFigures(t testing.TB, lines [][]byte) (streamBytes, events int) {
	inStream := false
	for _, line := range lines {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m.Method == "" {
			continue // an answer
		}
		var params map[string]json.RawMessage
		json.Unmarshal(m.Params, &params)
		if _, ok := params["messages"]; ok {
			t.Fatalf("a notification carries a message list: %.200s", line)
		}
		if m.Method == protocol.MethodAssistantContentUpdated {
			inStream = true
		}
		if inStream {
			streamBytes += len(line) + 1
			events++
		}
		if m.Method == protocol.MethodAssistantContentUpdated && strings.Contains(string(m.Params), `"stage":"end"`) {
			inStream = false
		}
	}
	if limit := int(1.3*longAnswer) + perEvent*events; streamBytes > limit {
		t.Fatalf("%d bytes on the wire for a %d-byte answer in %d notifications (limit %d)", streamBytes, longAnswer, events, limit)
	}
	return streamBytes, events
}

// TestLongSessionStreamsDeltasOnly runs the real `sluice rpc` on the fake
// Anthropic server: a session of 500 messages, then a 100 KB streamed
// answer, watched by a Go host (package client) on the binary's stdout.
func TestLongSessionStreamsDeltasOnly(t *testing.T) {
	sluiceBin := testbin.Sluice(t)
	t.Parallel()
	fake := fakemodel.NewEcho()
	defer fake.Close()
	cmd := exec.Command(sluiceBin, "rpc", "--provider", "anthropic")
	cmd.Dir = t.TempDir()
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "SLUICE_HOME="+home, "HOME="+home, "ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=test-key-not-secret")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &meter{Conn: wire.NewLineConn(stdout, stdin, 1<<30)}
	c := client.New(m, client.Options{})
	defer func() {
		stdin.Close()
		<-c.Done()
		if err := cmd.Wait(); err != nil {
			t.Errorf("sluice rpc: %v\n%s", err, stderr.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sess, err := c.Initialize(ctx, wire.InitializeParams{})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, sess)
	for i := range longHistory / 2 {
		if _, err := sess.Run(ctx, fmt.Sprint("message ", i)); err != nil {
			t.Fatal(err)
		}
	}
	history := sess.Messages()
	listBytes, _ := json.Marshal(history)

	m.record(true)
	start := time.Now()
	if _, err := sess.Run(ctx, fmt.Sprint("long:", longAnswer)); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	lines := m.record(false)
	streamBytes, events := streamFigures(t, lines)

	host := sess.Messages()
	if got := host.Messages[len(host.Messages)-1].Text(); got != fakemodel.LongAnswer(longAnswer) {
		t.Fatalf("the host's answer has %d bytes, not the %d streamed", len(got), longAnswer)
	}
	srv, err := sess.GetMessages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(host)
	s, _ := json.Marshal(srv)
	if !bytes.Equal(h, s) {
		t.Fatal("the host's list differs from getMessages")
	}
	t.Logf("history: %d messages (a full list would be %d bytes); answer %d bytes streamed as %d notifications, %d bytes on stdout (%.2f × the answer), %v",
		len(history.Messages), len(listBytes), longAnswer, events, streamBytes, float64(streamBytes)/longAnswer, elapsed.Round(time.Millisecond))
}

// BenchmarkLongSessionStream measures serving a 100 KB streamed answer to
// a host on a session of 500 messages, in process (scripted model, no
// store): wire bytes per answer and throughput.
func BenchmarkLongSessionStream(b *testing.B) {
	const chunk = 64
	answer := fakemodel.LongAnswer(longAnswer)
	script := modeltest.NewScript()
	script.Respond = func(req *model.Request) []modeltest.Step {
		last := req.Messages[len(req.Messages)-1]
		if len(last.Content) > 0 && last.Content[0].Text == "long" {
			var chunks []string
			for i := 0; i < len(answer); i += chunk {
				chunks = append(chunks, answer[i:min(i+chunk, len(answer))])
			}
			return modeltest.Answer("long", chunks...)
		}
		return modeltest.Answer("short", "ok")
	}
	srv := rpc.NewServer(rpc.Options{NewSession: func(ctx context.Context, cfg rpc.SessionConfig) (agent.Options, error) {
		return agent.Options{Provider: script, Stream: modeltest.StreamOptions(), AutoCompact: -1, WorkDir: b.TempDir()}, nil
	}})
	defer srv.Close()
	srvSide, hostSide := rpctest.Pipe(0)
	served := make(chan struct{})
	go func() { defer close(served); srv.ServeConn(context.Background(), srvSide) }()
	m := &meter{Conn: hostSide}
	c := client.New(m, client.Options{})
	defer func() { c.Close(); <-served }()
	ctx := context.Background()
	sess, err := c.Initialize(ctx, wire.InitializeParams{})
	if err != nil {
		b.Fatal(err)
	}
	drain(b, sess)
	for i := range longHistory / 2 {
		if _, err := sess.Run(ctx, fmt.Sprint("message ", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(longAnswer)
	b.ResetTimer()
	var wire, events int
	for range b.N {
		m.record(true)
		if _, err := sess.Run(ctx, "long"); err != nil {
			b.Fatal(err)
		}
		n, e := streamFigures(b, m.record(false))
		wire += n
		events += e
	}
	b.ReportMetric(float64(wire)/float64(b.N), "wire-B/answer")
	b.ReportMetric(float64(events)/float64(b.N), "notifications/answer")
}
