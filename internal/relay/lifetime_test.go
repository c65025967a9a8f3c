package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode/fakeclaude"
	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
)

// requestChannel is a channel whose every inbound message comes with its
// own context, cancelled as soon as handle returns — as an HTTP request's
// is. Its sends are recorded.
type requestChannel struct {
	in chan channel.Inbound
	// fail, when set, is what Receive returns at once.
	fail error

	mu      sync.Mutex
	changed chan struct{}
	sent    []string
}

func newRequestChannel() *requestChannel {
	return &requestChannel{in: make(chan channel.Inbound), changed: make(chan struct{})}
}

func (c *requestChannel) Name() string { return "test" }
func (c *requestChannel) Limit() int   { return split.TelegramLimit }

func (c *requestChannel) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	if c.fail != nil {
		return c.fail
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case in := <-c.in:
			reqCtx, cancel := context.WithCancel(ctx)
			handle(reqCtx, in)
			cancel()
		}
	}
}

func (c *requestChannel) Send(_ context.Context, _, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, text)
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

func (c *requestChannel) Typing(context.Context, string, bool) error { return nil }

// waitSent waits for n sends and returns them.
func (c *requestChannel) waitSent(t *testing.T, n int) []string {
	t.Helper()
	ctx := waitCtx(t)
	for {
		c.mu.Lock()
		sent, ch := append([]string(nil), c.sent...), c.changed
		c.mu.Unlock()
		if len(sent) >= n {
			return sent
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d messages sent, want %d: %q", len(sent), n, sent)
		case <-ch:
		}
	}
}

// TestWorkerOutlivesTheFirstMessage: a chat's worker lives as long as the
// relay, not as the context of the message that started it, so the second
// message of a chat is answered too.
func TestWorkerOutlivesTheFirstMessage(t *testing.T) {
	t.Parallel()
	ch := newRequestChannel()
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	startRelay(t, st, ch, be, nil, fast)
	ch.in <- channel.Inbound{Chat: "1", Text: "tool_use_bash.ndjson", Key: "a"}
	ch.waitSent(t, 2)
	ch.in <- channel.Inbound{Chat: "1", Text: "tool_use_bash.ndjson", Key: "b"}
	sent := ch.waitSent(t, 4)
	if sent[3] != "The command printed: hello" {
		t.Errorf("second answer: %q", sent)
	}
}

// TestReceiveFailureStopsTheRelay: when the channel cannot receive, Run
// returns its cause instead of running deaf.
func TestReceiveFailureStopsTheRelay(t *testing.T) {
	t.Parallel()
	ch := newRequestChannel()
	ch.fail = errors.New("token revoked")
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	r, err := New(context.Background(), Options{Channel: ch, Backend: be, Store: st, Pacing: fast})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(waitCtx(t))
	if err == nil || !strings.Contains(err.Error(), "token revoked") {
		t.Errorf("Run = %v, want the channel's error", err)
	}
}

// TestCommandLineCannotReceive: 'sluice relay telegram' exits 1 with the
// cause when its webhook address is taken, and when the Bot API refuses the
// token.
func TestCommandLineCannotReceive(t *testing.T) {
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("SLUICE_FAKE_CLAUDE_DIR", runs(t))
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	for _, tt := range []struct {
		name, token string
		args        []string
		want        string
	}{
		{"webhook address taken", telegramfake.Token,
			[]string{"--webhook-url", "https://example.test/hook", "--webhook-listen", taken.Addr().String()}, "address already in use"},
		{"token refused", "999:not-the-token", nil, "401"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TELEGRAM_BOT_TOKEN", tt.token)
			t.Setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret")
			args := append([]string{"telegram", "--state-dir", t.TempDir(), "--base-url", srv.URL, "--allow", "42",
				"--backend", "claude", "--claude-bin", os.Args[0]}, tt.args...)
			var stderr bytes.Buffer
			code := runRelay(waitCtx(t), testbin.Sluice(t), args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), tt.want)
			}
			if strings.Contains(stderr.String(), tt.token) {
				t.Error("the token is in the output")
			}
		})
	}
}

// gatedBackend's runs start only when the test lets them, and then last
// until aborted.
type gatedBackend struct {
	starting chan struct{} // a Start began
	release  chan struct{} // Start may return

	mu      sync.Mutex
	aborted []string
	abort   chan struct{} // closed by the first Abort of a started run
	started bool
}

func newGatedBackend() *gatedBackend {
	return &gatedBackend{starting: make(chan struct{}, 1), release: make(chan struct{}), abort: make(chan struct{})}
}

func (b *gatedBackend) Name() string { return "gated" }
func (b *gatedBackend) Close() error { return nil }
func (b *gatedBackend) Open(context.Context, string) (backend.Conversation, error) {
	return gatedConv{b}, nil
}

type gatedConv struct{ b *gatedBackend }

func (c gatedConv) Start(ctx context.Context, _ string) (backend.Run, error) {
	c.b.starting <- struct{}{}
	<-c.b.release
	c.b.mu.Lock()
	c.b.started = true
	c.b.mu.Unlock()
	return gatedRun(c), nil
}

func (c gatedConv) Abort(reason string) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.b.aborted = append(c.b.aborted, reason)
	if c.b.started {
		select {
		case <-c.b.abort:
		default:
			close(c.b.abort)
		}
	}
}

func (gatedConv) Reset(context.Context) error                      { return nil }
func (gatedConv) Compact(context.Context) error                    { return nil }
func (gatedConv) Model() string                                    { return "" }
func (gatedConv) SetModel(string) error                            { return nil }
func (gatedConv) AnswerPermission(string, protocol.Decision) error { return backend.ErrUnsupported }
func (gatedConv) Ask(context.Context, string) (string, error)      { return "", backend.ErrUnsupported }
func (gatedConv) Session() string                                  { return "s" }
func (gatedConv) Close() error                                     { return nil }

type gatedRun struct{ b *gatedBackend }

func (r gatedRun) Next(ctx context.Context) (protocol.Event, error) {
	select {
	case <-r.b.abort:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (gatedRun) Result() string { return "" }
func (gatedRun) Close() error   { return nil }

// TestStopWhileTheRunStarts: /stop that comes while the agent is still
// starting its run stops that run once it started — it does not say
// "nothing is running" and let the run go on.
func TestStopWhileTheRunStarts(t *testing.T) {
	t.Parallel()
	ch := newRequestChannel()
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	be := newGatedBackend()
	startRelay(t, st, ch, be, nil, fast)
	ch.in <- channel.Inbound{Chat: "1", Text: "a question", Key: "q"}
	<-be.starting
	ch.in <- channel.Inbound{Chat: "1", Text: "/stop", Key: "s"}
	sent := ch.waitSent(t, 1)
	if !strings.HasPrefix(sent[0], "Stopping") {
		t.Errorf("/stop answered %q", sent[0])
	}
	close(be.release)
	select {
	case <-be.abort:
	case <-waitCtx(t).Done():
		t.Fatal("the run was never aborted")
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.aborted[len(be.aborted)-1] != "stopped from the chat" {
		t.Errorf("aborts %q", be.aborted)
	}
}
