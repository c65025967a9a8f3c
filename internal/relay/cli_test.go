package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat/wechatfake"
	"github.com/sluicehq/sluice/internal/testbin"
)

// syncBuffer is a bytes.Buffer safe to write from the command's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runRelay runs 'sluice relay args...' (the binary bin) until it exits or
// ctx ends, which interrupts it, as Ctrl-C does; it returns the exit code.
func runRelay(ctx context.Context, bin string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.CommandContext(ctx, bin, append([]string{"relay"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	err := cmd.Run()
	if cmd.ProcessState != nil {
		// An interrupted relay that exits 0 makes Run report ctx's error.
		return cmd.ProcessState.ExitCode()
	}
	fmt.Fprintln(stderr, "running sluice relay:", err)
	return -1
}

// mainInBackground runs 'sluice relay args...' until stop.
func mainInBackground(t *testing.T, args ...string) (stop func() int, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	code := make(chan int, 1)
	bin := testbin.Sluice(t)
	go func() { code <- runRelay(ctx, bin, args, strings.NewReader(""), &syncBuffer{}, stderr) }()
	var once sync.Once
	var c int
	stop = func() int {
		once.Do(func() { cancel(); c = <-code })
		return c
	}
	t.Cleanup(func() { stop() })
	return stop, stderr
}

// TestCommandLineWeChat is 'sluice relay wechat login' then 'sluice relay
// wechat --backend claude' against the fake WeChat server and the fake
// claude, as an operator would run them.
func TestCommandLineWeChat(t *testing.T) {
	f := wechatfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	state := t.TempDir()
	t.Setenv("SLUICE_FAKE_CLAUDE_DIR", runs(t))

	var out, errOut bytes.Buffer
	if code := runRelay(context.Background(), testbin.Sluice(t), []string{"wechat", "login", "--state-dir", state, "--base-url", srv.URL}, nil, &out, &errOut); code != 0 {
		t.Fatalf("login: %d %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "Logged in") {
		t.Errorf("login output %q", out.String())
	}
	creds, err := os.ReadFile(filepath.Join(state, "wechat-credentials.json"))
	if err != nil || !strings.Contains(string(creds), wechatfake.Token) {
		t.Fatalf("credentials: %v", err)
	}

	stop, stderr := mainInBackground(t, "wechat", "--state-dir", state, "--base-url", srv.URL,
		"--backend", "claude", "--claude-bin", os.Args[0], "--min-interval", "0", "--typing-every", "1h")
	// The owner (who scanned the code) is allowed by default.
	f.UserSays("owner@im.wechat", "trace_d.ndjson", "ctx-1")
	sent, err := f.WaitSent(waitCtx(t), 5)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d: %s", code, stderr.String())
	}
	if len(sent) != 5 || sent[4].To != "owner@im.wechat" {
		t.Errorf("sent %d messages", len(sent))
	}
	if strings.Contains(stderr.String(), wechatfake.Token) {
		t.Error("the bot token is in the log")
	}
}

// TestCommandLineTelegram is 'sluice relay telegram --backend claude'
// against the fake Bot API.
func TestCommandLineTelegram(t *testing.T) {
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("SLUICE_FAKE_CLAUDE_DIR", runs(t))
	t.Setenv("TELEGRAM_BOT_TOKEN", telegramfake.Token)

	var errOut bytes.Buffer
	if code := runRelay(context.Background(), testbin.Sluice(t), []string{"telegram", "--state-dir", t.TempDir(), "--base-url", srv.URL}, nil, &bytes.Buffer{}, &errOut); code != 1 || !strings.Contains(errOut.String(), "--allow") {
		t.Errorf("without --allow: %d %q", code, errOut.String())
	}

	stop, stderr := mainInBackground(t, "telegram", "--state-dir", t.TempDir(), "--base-url", srv.URL, "--allow", "42",
		"--backend", "claude", "--claude-bin", os.Args[0], "--min-interval", "0", "--chat-interval", "0")
	f.UserSays(42, "trace_a.ndjson")
	sent, err := f.WaitSent(waitCtx(t), 1)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d: %s", code, stderr.String())
	}
	if len([]rune(sent[0].Text)) != 1485 {
		t.Errorf("answer of %d characters", len([]rune(sent[0].Text)))
	}
	if strings.Contains(stderr.String(), telegramfake.Token) {
		t.Error("the bot token is in the log")
	}
}

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := runRelay(context.Background(), testbin.Sluice(t), []string{"simulate", "--channel", "telegram", "testdata/trace_d.ndjson"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("%d %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], `{"kind":"interstitial","text":"我先看一下`) || !strings.Contains(lines[4], `"units":1375}`) {
		t.Errorf("output:\n%s", out.String())
	}
	if code := runRelay(context.Background(), testbin.Sluice(t), []string{"simulate", "--channel", "irc", "x"}, nil, &out, &errOut); code != 2 {
		t.Errorf("bad channel: %d", code)
	}
}
