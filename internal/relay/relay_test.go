package relay

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode/fakeclaude"
	"github.com/sluicehq/sluice/internal/relay/backend/sluiceagent"
	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat/wechatfake"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	sessionstore "github.com/sluicehq/sluice/store"
)

func TestMain(m *testing.M) {
	serveTestMCP()
	fakeclaude.Main()
	code := m.Run()
	stopNATS()
	pgtest.Stop()
	testbin.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// fast paces nothing: pacing has its own tests with a fake clock.
var fast = deliver.Pacing{BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond}

// runs is a fixture directory for the fake claude.
func runs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"trace_a.ndjson", "trace_d.ndjson", "tool_use_bash.ndjson"} {
		data, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type env struct {
	t     *testing.T
	store *store.Store
	relay *Relay
	stop  func()
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func startRelay(t *testing.T, st *store.Store, ch channel.Channel, be backend.Backend, clock model.Clock, p deliver.Pacing, allow ...string) *env {
	t.Helper()
	r, err := New(context.Background(), Options{Channel: ch, Backend: be, Store: st, Pacing: p, Clock: clock, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	e := &env{t: t, store: st, relay: r, stop: func() { cancel(); <-done }}
	t.Cleanup(e.stop)
	return e
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestWeChatClaudeTraces: the seed's traces through the whole relay —
// WeChat fake server, Claude Code backend replaying the recorded runs.
func TestWeChatClaudeTraces(t *testing.T) {
	t.Parallel()
	f := wechatfake.New()
	f.ReplayFirst = true // every update twice: de-duplication must hold
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	wc := wechat.New(wechat.Config{BaseURL: srv.URL, Token: wechatfake.Token, BotID: "bot", KV: st})
	dir := runs(t)
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(dir), KV: st})
	startRelay(t, st, wc, be, nil, fast, "alice")

	f.UserSays("mallory", "hello", "ctx-m")
	f.UserSays("alice", "trace_a.ndjson", "ctx-a")
	f.UserSays("alice", "trace_d.ndjson", "ctx-a2")
	sent, err := f.WaitSent(waitCtx(t), 1+1+5)
	if err != nil {
		for _, s := range sent {
			t.Logf("%s %.40q", s.To, s.Text)
		}
		t.Fatal(err)
	}
	if sent[0].To != "mallory" || !strings.Contains(sent[0].Text, "private") {
		t.Errorf("the stranger got %+v", sent[0])
	}
	var toAlice []wechatfake.Sent
	for _, s := range sent[1:] {
		if s.To == "alice" {
			toAlice = append(toAlice, s)
		}
	}
	if len(toAlice) != 6 {
		t.Fatalf("alice got %d messages, want 1 (trace A) + 2 + 3 (trace D)", len(toAlice))
	}
	if split.Units(toAlice[0].Text) != 1485 {
		t.Errorf("trace A answer is %d units", split.Units(toAlice[0].Text))
	}
	if !strings.HasPrefix(toAlice[1].Text, "我先看一下") || !strings.HasPrefix(toAlice[2].Text, "文件比较长") {
		t.Errorf("interstitials %q, %q", toAlice[1].Text, toAlice[2].Text)
	}
	total := 0
	for _, s := range toAlice[3:] {
		total += split.Units(s.Text)
		if split.Units(s.Text) > split.WeChatLimit {
			t.Errorf("a message over WeChat's limit")
		}
	}
	if total+4 != 9121 { // two blank-line separators at the cuts
		t.Errorf("the final answer's parts hold %d units", total)
	}
	if toAlice[5].ContextToken != "ctx-a2" {
		t.Errorf("reply context token %q", toAlice[5].ContextToken)
	}
	inv, _ := fakeclaude.Invocations(dir)
	if len(inv) != 2 {
		t.Errorf("claude ran %d times, want 2 (duplicates dropped)", len(inv))
	}
	if _, err := f.WaitSent(waitCtx(t), 7); err != nil || len(f.Typings()) == 0 {
		t.Errorf("no typing indicator: %v", f.Typings())
	}
}

// TestRestartDeliversUndelivered: the platform refuses everything while
// the agent answers; after a restart against a working platform, the
// answer arrives, in order.
func TestRestartDeliversUndelivered(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "relay.db")
	dir := runs(t)

	down := telegramfake.New()
	for i := 0; i < 1000; i++ {
		down.FailSends(telegramfake.Failure{Code: 500})
	}
	srv1 := httptest.NewServer(down)
	st := openStore(t, dbPath)
	tg := telegram.New(telegram.Config{BaseURL: srv1.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(dir), KV: st})
	e := startRelay(t, st, tg, be, nil, fast)
	down.UserSays(7, "tool_use_bash.ndjson")
	ctx := waitCtx(t)
	for e.relay.Queue().Pending("7") < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the answer never reached the outbox")
		case <-time.After(10 * time.Millisecond):
		}
	}
	e.stop()
	srv1.Close()
	st.Close()

	up := telegramfake.New()
	srv2 := httptest.NewServer(up)
	t.Cleanup(srv2.Close)
	st = openStore(t, dbPath)
	t.Cleanup(func() { st.Close() })
	tg = telegram.New(telegram.Config{BaseURL: srv2.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	startRelay(t, st, tg, be, nil, fast)
	sent, err := up.WaitSent(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "I'll run the command." || sent[1].Text != "The command printed: hello" || sent[0].ChatID != 7 {
		t.Errorf("after restart: %+v", sent)
	}
}

// TestStillWorking: a run that goes quiet gets a notice after the silence
// setting, on the fake clock, and /stop delivers what was produced.
func TestStillWorking(t *testing.T) {
	t.Parallel()
	f := wechatfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	clock := modeltest.NewClock(time.Date(2026, 6, 20, 10, 0, 0, 0, time.UTC))
	wc := wechat.New(wechat.Config{BaseURL: srv.URL, Token: wechatfake.Token, KV: st, Clock: clock})
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	e := startRelay(t, st, wc, be, clock, fast)
	// The first turn's remark, then the process hangs mid-answer.
	f.UserSays("bob", "hang:tool_use_bash.ndjson:24", "ctx")
	if _, err := f.WaitSent(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	clock.WaitArmed(2) // the watcher's typing and silence timers
	clock.Advance(5 * time.Minute)
	sent, err := f.WaitSent(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sent[1].Text, "⏳ Still working") {
		t.Errorf("notice %q", sent[1].Text)
	}
	f.UserSays("bob", "/stop", "ctx")
	sent, err = f.WaitSent(waitCtx(t), 5)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range sent[2:] {
		texts = append(texts, s.Text)
	}
	got := strings.Join(texts, "|")
	if !strings.Contains(got, "Stopping") || !strings.Contains(got, "The command prin") || !strings.Contains(got, "⚠️") {
		t.Errorf("after /stop: %q", got)
	}
	e.stop()
}

// TestCommands: /help, /model, /status, /new answered by the relay.
func TestCommands(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	startRelay(t, st, tg, be, nil, fast)
	for _, c := range []string{"/help", "/model sonnet", "/model", "/status", "/new", "/allow", "/stop"} {
		f.UserSays(1, c)
	}
	sent, err := f.WaitSent(waitCtx(t), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Commands:", "Model set to sonnet.", "Model: sonnet", "Backend: claude", "New conversation started.", "No approval is waiting.", "Nothing is running."}
	for i, w := range want {
		if !strings.HasPrefix(sent[i].Text, w) {
			t.Errorf("reply %d = %q, want it to start with %q", i, sent[i].Text, w)
		}
	}
}

// TestStuckChatOverTelegram: the Bot API leaves every sendMessage to one
// chat unanswered; another chat's answers go meanwhile, and once the
// platform answers again the stuck chat's arrive, in order.
func TestStuckChatOverTelegram(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	f.HangSends(7, 1<<30)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	p := fast
	// Long enough that a loaded machine's sends to chat 8 never time out
	// (a retry would send one twice), short for the test.
	p.SendTimeout = time.Second
	startRelay(t, st, tg, be, nil, p)
	f.UserSays(7, "tool_use_bash.ndjson")
	f.UserSays(8, "tool_use_bash.ndjson")
	sent, err := f.WaitSent(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sent {
		if s.ChatID != 8 {
			t.Fatalf("sent %+v while chat 7 hangs", sent)
		}
	}
	f.HangSends(7, 0)
	sent, err = f.WaitSent(waitCtx(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	var to7 []string
	for _, s := range sent {
		if s.ChatID == 7 {
			to7 = append(to7, s.Text)
		}
	}
	if len(to7) != 2 || to7[0] != "I'll run the command." || to7[1] != "The command printed: hello" {
		t.Errorf("chat 7 got %q", to7)
	}
}

// stoppedWhen stops the relay process p (SIGSTOP) as soon as check,
// given the state at path as a kill at that moment would leave it, returns
// true, and leaves it stopped for the caller to kill; it returns false,
// with p running, once ctx ends. The relay holds its state file's lock:
// check reads a copy, taken while p is stopped (wait4 reports the stop
// once every thread of p has stopped, so no commit is half-written).
func stoppedWhen(ctx context.Context, t *testing.T, p *os.Process, path string, check func(*store.Store) bool) bool {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "state.db")
	for {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(p.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
			t.Fatalf("waiting for the relay to stop: %v (status %#x)", err, ws)
		}
		if data, err := os.ReadFile(path); err == nil {
			if err := os.WriteFile(cp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			st := openStore(t, cp)
			done := check(st)
			st.Close()
			if done {
				return true
			}
		}
		if err := p.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// crashPlatform is a fake platform as TestCrashWhileAnswering drives it.
type crashPlatform struct {
	name    string
	args    []string // 'sluice relay' arguments besides the common ones
	say     func(text string)
	waitFor func(ctx context.Context, n int) ([]string, error)
}

// TestCrashWhileAnswering: the relay process is killed (SIGKILL) while the
// agent answers one question and another waits. After a restart on the
// same state, the first chat is told its answer was cut off — the
// question is not run twice — and the waiting question is answered.
func TestCrashWhileAnswering(t *testing.T) {
	tg := telegramfake.New()
	tgSrv := httptest.NewServer(tg)
	t.Cleanup(tgSrv.Close)
	wc := wechatfake.New()
	wcSrv := httptest.NewServer(wc)
	t.Cleanup(wcSrv.Close)
	t.Setenv("TELEGRAM_BOT_TOKEN", telegramfake.Token)
	platforms := []crashPlatform{
		{
			name: "telegram", args: []string{"--base-url", tgSrv.URL, "--allow", "7", "--chat-interval", "0"},
			say: func(text string) { tg.UserSays(7, text) },
			waitFor: func(ctx context.Context, n int) ([]string, error) {
				sent, err := tg.WaitSent(ctx, n)
				var texts []string
				for _, s := range sent {
					texts = append(texts, s.Text)
				}
				return texts, err
			},
		},
		{
			name: "wechat", args: []string{"--base-url", wcSrv.URL},
			say: func(text string) { wc.UserSays("owner@im.wechat", text, "ctx-1") },
			waitFor: func(ctx context.Context, n int) ([]string, error) {
				sent, err := wc.WaitSent(ctx, n)
				var texts []string
				for _, s := range sent {
					texts = append(texts, s.Text)
				}
				return texts, err
			},
		},
	}
	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			dir := runs(t)
			t.Setenv("SLUICE_FAKE_CLAUDE_DIR", dir)
			state := t.TempDir()
			if p.name == "wechat" {
				// As 'sluice relay wechat login' leaves them.
				creds := wechat.Credentials{Token: wechatfake.Token, BotID: "bot", BaseURL: wcSrv.URL, UserID: "owner@im.wechat"}
				if err := wechat.SaveCredentials(credentialsPath(state), creds); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{p.name, "--state-dir", state, "--backend", "claude", "--claude-bin", os.Args[0], "--min-interval", "0"}, p.args...)

			var stderr syncBuffer
			cmd := exec.Command(testbin.Sluice(t), append([]string{"relay"}, args...)...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			kill := func() {
				cmd.Process.Kill()
				cmd.Wait()
			}
			// The first answer hangs after its first remark, the second
			// waits.
			p.say("hang:tool_use_bash.ndjson:24")
			p.say("trace_a.ndjson")
			if _, err := p.waitFor(waitCtx(t), 1); err != nil {
				kill()
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			// Kill once the remark's delivery is recorded and both
			// questions are (a kill between the platform's taking a
			// message and its row going sends it again: at least once, see
			// the README).
			ctx := waitCtx(t)
			var items []store.Item
			var qs []store.Question
			stopped := stoppedWhen(ctx, t, cmd.Process, filepath.Join(state, p.name+".db"), func(st *store.Store) bool {
				var err1, err2 error
				items, err1 = st.Pending(ctx, p.name)
				qs, err2 = st.Questions(ctx, p.name)
				return err1 == nil && err2 == nil && len(items) == 0 && len(qs) == 2
			})
			kill()
			if !stopped {
				t.Fatalf("outbox %+v, inbox %+v", items, qs)
			}

			stop, stderr2 := mainInBackground(t, args...)
			sent, err := p.waitFor(waitCtx(t), 3)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr2.String())
			}
			if sent[0] != "I'll run the command." {
				t.Errorf("before the crash: %q", sent[0])
			}
			if !strings.Contains(sent[1], "cut off") || !strings.Contains(sent[1], "hang:tool_use_bash.ndjson:24") {
				t.Errorf("after the restart, first: %q", sent[1])
			}
			if len([]rune(sent[2])) != 1485 {
				t.Errorf("the waiting question's answer: %.60q (%d characters)", sent[2], len([]rune(sent[2])))
			}
			if code := stop(); code != 0 {
				t.Errorf("exit code %d: %s", code, stderr2.String())
			}
			inv, err := fakeclaude.Invocations(dir)
			if err != nil || len(inv) != 2 || inv[1].Prompt != "trace_a.ndjson" {
				t.Errorf("claude ran %+v (%v); want the cut-off question once, then the waiting one", inv, err)
			}
			if all, _ := p.waitFor(ctx, 0); len(all) != 3 {
				t.Errorf("sent %d messages, want 3", len(all))
			}
		})
	}
}

// TestStopDropsWaitingQuestions: /stop withdraws the questions waiting
// their turn, also from the state file, so a restart does not answer them.
func TestStopDropsWaitingQuestions(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	be := claudecode.New(claudecode.Config{Command: os.Args[0], Env: fakeclaude.Env(runs(t)), KV: st})
	startRelay(t, st, tg, be, nil, fast)
	f.UserSays(3, "hang:tool_use_bash.ndjson:24")
	if _, err := f.WaitSent(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	f.UserSays(3, "trace_a.ndjson")
	f.UserSays(3, "trace_d.ndjson")
	// Both are stored before /stop comes: its reply is the witness.
	ctx := waitCtx(t)
	for {
		qs, err := st.Questions(ctx, "telegram")
		if err == nil && len(qs) == 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("inbox %+v", qs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	f.UserSays(3, "/stop")
	// The aborted run's cut answer and /stop's reply come in either order.
	reply := ""
	for n := 2; reply == ""; n++ {
		sent, err := f.WaitSent(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sent[n-1].Text, "dropped") {
			reply = sent[n-1].Text
		}
	}
	if !strings.Contains(reply, "2 waiting message(s) dropped") {
		t.Errorf("/stop said %q", reply)
	}
	// The aborted run's answer takes its question out; nothing is left.
	for {
		qs, err := st.Questions(ctx, "telegram")
		if err == nil && len(qs) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("inbox after /stop: %+v", qs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// newScript is a fake Anthropic model answering its requests with replies
// (fakemodel.ParseReplies's specs), in order.
func newScript(t *testing.T, replies ...string) *fakemodel.Script {
	t.Helper()
	answers, err := fakemodel.ParseReplies(replies)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fakemodel.NewScript(fakemodel.Anthropic, answers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestCrashWhileSluiceAnswers is TestCrashWhileAnswering with sluice's own
// agent: the model server hangs mid-answer, the relay is killed, and after
// the restart the chat is told, the waiting question is answered, in the
// chat's restored session.
func TestCrashWhileSluiceAnswers(t *testing.T) {
	// The first question's answer hangs mid-stream (the relay dies with
	// the request open); the second's is whole.
	modelSrv := newScript(t, "hang:Thinking about it", "say:Answer two.")
	tg := telegramfake.New()
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)
	t.Setenv("TELEGRAM_BOT_TOKEN", telegramfake.Token)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", modelSrv.URL)
	t.Setenv("SLUICE_HOME", t.TempDir())
	state := t.TempDir()
	args := []string{"telegram", "--state-dir", state, "--base-url", srv.URL, "--allow", "5", "--workdir", t.TempDir(),
		"--min-interval", "0", "--chat-interval", "0"}

	var stderr syncBuffer
	cmd := exec.Command(testbin.Sluice(t), append([]string{"relay"}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	tg.UserSays(5, "first question, please")
	tg.UserSays(5, "second question")
	ctx := waitCtx(t)
	for len(modelSrv.Requests()) == 0 {
		select {
		case <-ctx.Done():
			kill()
			t.Fatalf("the model was never asked\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	var qs []store.Question
	stopped := stoppedWhen(ctx, t, cmd.Process, filepath.Join(state, "telegram.db"), func(st *store.Store) bool {
		var err error
		qs, err = st.Questions(ctx, "telegram")
		return err == nil && len(qs) == 2 && qs[0].Started
	})
	kill()
	if !stopped {
		t.Fatalf("inbox %+v\n%s", qs, stderr.String())
	}

	stop, stderr2 := mainInBackground(t, args...)
	sent, err := tg.WaitSent(waitCtx(t), 2)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr2.String())
	}
	if !strings.Contains(sent[0].Text, "cut off") || !strings.Contains(sent[0].Text, "first question, please") {
		t.Errorf("after the restart, first: %q", sent[0].Text)
	}
	if sent[1].Text != "Answer two." {
		t.Errorf("the waiting question's answer: %q", sent[1].Text)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d: %s", code, stderr2.String())
	}
	if bodies := modelSrv.Requests(); len(bodies) != 2 || !strings.Contains(string(bodies[1].Body), "first question, please") {
		t.Errorf("the model got %d requests; the second should carry the restored session: %.300s", len(bodies), bodies)
	}
}

// TestApprovalInTheChat: with sluice's agent, a command asks for approval
// in the chat; /allow answers it, and the request is gone from /status and
// from a second /allow once the agent resolved it — the relay reads the
// pending requests from the run's reduced list.
func TestApprovalInTheChat(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me look."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo approved"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "It printed approved."),
	)
	workDir, sessions := t.TempDir(), t.TempDir()
	be := sluiceagent.New(sluiceagent.Config{KV: st, Options: func(string) agent.Options {
		return agent.Options{Provider: script, WorkDir: workDir, PermissionMode: protocol.ModeDefault,
			Stream: modeltest.StreamOptions(), Store: sessionstore.NewJSONL(sessions)}
	}})
	t.Cleanup(func() { be.Close() })
	startRelay(t, st, tg, be, nil, fast)
	f.UserSays(4, "what does echo say?")
	sent, err := f.WaitSent(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "Let me look." || !strings.HasPrefix(sent[1].Text, "🔐 Bash wants to run:\necho approved") {
		t.Fatalf("before the approval: %q, %q", sent[0].Text, sent[1].Text)
	}
	f.UserSays(4, "/status")
	f.UserSays(4, "/allow")
	sent, err = f.WaitSent(waitCtx(t), 5)
	if err != nil {
		t.Fatal(err)
	}
	// The answer lets the run go on: its last message can be queued
	// before the command's reply (a scripted model answers at once).
	after := []string{sent[3].Text, sent[4].Text}
	slices.Sort(after)
	if !strings.Contains(sent[2].Text, "Approvals asked: 1") || after[0] != "Allowed." || after[1] != "It printed approved." {
		t.Errorf("around /allow: %q, %q, %q", sent[2].Text, sent[3].Text, sent[4].Text)
	}
	f.UserSays(4, "/allow")
	f.UserSays(4, "/status")
	sent, err = f.WaitSent(waitCtx(t), 7)
	if err != nil {
		t.Fatal(err)
	}
	if sent[5].Text != "No approval is waiting." || !strings.Contains(sent[6].Text, "Approvals asked: 0") {
		t.Errorf("after the run: %q, %q", sent[5].Text, sent[6].Text)
	}
}

// TestBtwInTheChat: /btw asked while the agent waits for an approval is
// answered at once, beside the run, and the conversation does not keep
// it; with claude -p as the backend it says it cannot.
func TestBtwInTheChat(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me look."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo approved"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "It is 42."),
		modeltest.Answer("m3", "It printed approved."),
	)
	workDir, sessions := t.TempDir(), t.TempDir()
	be := sluiceagent.New(sluiceagent.Config{KV: st, Options: func(string) agent.Options {
		return agent.Options{Provider: script, WorkDir: workDir, PermissionMode: protocol.ModeDefault,
			Stream: modeltest.StreamOptions(), Store: sessionstore.NewJSONL(sessions)}
	}})
	t.Cleanup(func() { be.Close() })
	startRelay(t, st, tg, be, nil, fast)
	f.UserSays(4, "what does echo say?")
	if _, err := f.WaitSent(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	f.UserSays(4, "/btw what is the answer?")
	sent, err := f.WaitSent(waitCtx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	if sent[2].Text != "It is 42." {
		t.Fatalf("the side answer: %q", sent[2].Text)
	}
	f.UserSays(4, "/allow")
	sent, err = f.WaitSent(waitCtx(t), 5)
	if err != nil {
		t.Fatal(err)
	}
	if sent[3].Text != "Allowed." || sent[4].Text != "It printed approved." {
		t.Errorf("after the approval: %q, %q", sent[3].Text, sent[4].Text)
	}
	for _, m := range script.Request(2).Messages {
		for _, c := range m.Content {
			if strings.Contains(c.Text, "what is the answer") || strings.Contains(c.Text, "It is 42.") {
				t.Errorf("the side question entered the conversation: %+v", m)
			}
		}
	}
	f.UserSays(4, "/btw")
	if sent, err = f.WaitSent(waitCtx(t), 6); err != nil || sent[5].Text != "Usage: /btw question" {
		t.Errorf("/btw alone: %v %q", err, sent[len(sent)-1].Text)
	}
}

// TestSteeringInTheChat: with sluice's agent, a question sent while a run
// goes on reaches the agent at once. Sent during a tool round, it joins
// the run at its next model request and the run's answer answers both;
// sent during the run's last response, it gets a run and an answer of its
// own, after the first's. The inbox is empty after either.
func TestSteeringInTheChat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		tools bool // the second question comes during a tool round
		want  []string
	}{
		{name: "during a tool round", tools: true, want: []string{"Let me look.", "Allowed.", "Both done."}},
		{name: "during the last response", want: []string{"Let me look.", "Allowed.", "First done.", "Second done."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := telegramfake.New()
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
			t.Cleanup(func() { st.Close() })
			tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
			gate := make(chan struct{})
			first := modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me look."),
				modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo approved"}), modeltest.Stop("tool_use"))
			script := modeltest.NewScript(first, modeltest.Answer("m2", "Both done."))
			if !tt.tools {
				script = modeltest.NewScript(first,
					modeltest.Response(modeltest.Start("m2"), modeltest.Gate(gate), modeltest.Text(0, "First done."), modeltest.Stop("end_turn")),
					modeltest.Answer("m3", "Second done."))
			}
			workDir, sessions := t.TempDir(), t.TempDir()
			be := sluiceagent.New(sluiceagent.Config{KV: st, Options: func(string) agent.Options {
				return agent.Options{Provider: script, WorkDir: workDir, PermissionMode: protocol.ModeDefault,
					Stream: modeltest.StreamOptions(), Store: sessionstore.NewJSONL(sessions)}
			}})
			t.Cleanup(func() { be.Close() })
			startRelay(t, st, tg, be, nil, fast)
			f.UserSays(4, "what does echo say?")
			if _, err := f.WaitSent(waitCtx(t), 2); err != nil { // the text and the approval prompt
				t.Fatal(err)
			}
			if tt.tools {
				f.UserSays(4, "and the tests?")
				f.UserSays(4, "/allow")
			} else {
				f.UserSays(4, "/allow")
				waitUntil(t, "the last response", func() bool { return script.Count() == 2 })
				f.UserSays(4, "and the tests?")
				waitUntil(t, "the second question stored", func() bool {
					qs, err := st.Questions(context.Background(), "telegram")
					return err == nil && len(qs) == 2
				})
				close(gate)
			}
			sent, err := f.WaitSent(waitCtx(t), len(tt.want)+1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range sent {
				if !strings.HasPrefix(m.Text, "🔐") {
					got = append(got, m.Text)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("sent %q, want %q", got, tt.want)
			}
			if tt.tools {
				msgs := script.Request(1).Messages
				if last := msgs[len(msgs)-1]; last.Content[0].Text != "and the tests?" || msgs[len(msgs)-2].Content[0].Type != model.ContentToolResult {
					t.Errorf("the steered question is not after the tool result: %+v", msgs[len(msgs)-2:])
				}
				if n := script.Count(); n != 2 {
					t.Errorf("%d model requests, want 2 (one run)", n)
				}
			}
			waitUntil(t, "an empty inbox", func() bool {
				qs, err := st.Questions(context.Background(), "telegram")
				return err == nil && len(qs) == 0
			})
		})
	}
}

// waitUntil polls cond; the bound only turns a hang into a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := waitCtx(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestShortRemarkJoinsTheAnswer: on a paced channel the remark before a
// tool call ("Let me look.") waits for the answer, which comes before the
// pacing gap is over (the fake clock never moves), and both go out as one
// message.
func TestShortRemarkJoinsTheAnswer(t *testing.T) {
	t.Parallel()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	st := openStore(t, filepath.Join(t.TempDir(), "relay.db"))
	t.Cleanup(func() { st.Close() })
	tg := telegram.New(telegram.Config{BaseURL: srv.URL, Token: telegramfake.Token, KV: st, PollTimeout: time.Second})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me look."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo looked"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "It printed looked."),
	)
	workDir, sessions := t.TempDir(), t.TempDir()
	be := sluiceagent.New(sluiceagent.Config{KV: st, Options: func(string) agent.Options {
		return agent.Options{Provider: script, WorkDir: workDir, PermissionMode: protocol.ModeBypassPermissions,
			Stream: modeltest.StreamOptions(), Store: sessionstore.NewJSONL(sessions)}
	}})
	t.Cleanup(func() { be.Close() })
	clock := modeltest.NewClock(time.Date(2026, 6, 20, 10, 0, 0, 0, time.UTC))
	startRelay(t, st, tg, be, clock, deliver.TelegramPacing())
	f.UserSays(4, "what does echo say?")
	sent, err := f.WaitSent(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "Let me look.\n\nIt printed looked." {
		t.Errorf("sent %q, want the remark and the answer in one message", sent[0].Text)
	}
}
