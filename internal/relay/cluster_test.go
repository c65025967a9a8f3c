package relay

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cluster/clustertest"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat/wechatfake"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store/pgstore"
)

// relayNode is a `sluice relay telegram` process of a cluster test.
type relayNode struct {
	id     string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed when the process exited
	err    error         // its Wait's, once done
}

// logOnFailure logs each node's stderr when the test fails.
func logOnFailure(t *testing.T, nodes map[string]*relayNode) {
	t.Cleanup(func() {
		if t.Failed() {
			for id, n := range nodes {
				t.Logf("node %s:\n%s", id, n.stderr.String())
			}
		}
	})
}

// channelHolder returns a function naming the node that holds the
// channel lease key now ("" when none does).
func channelHolder(t *testing.T, ctx context.Context, pg *pgstore.Store, key string) func() string {
	return func() string {
		l, err := pg.Owner(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l.Node
	}
}

func startRelayNode(t *testing.T, bin, id string, args []string, env []string) *relayNode {
	t.Helper()
	n := &relayNode{id: id, stderr: &syncBuffer{}, done: make(chan struct{})}
	// args[0] is the channel: its flags follow.
	n.cmd = exec.Command(bin, append([]string{"relay", args[0], "--node-id", id}, args[1:]...)...)
	n.cmd.Env = env
	n.cmd.Stderr = n.stderr
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		<-n.done
	})
	return n
}

// clusterPlatform is a fake chat platform as TestClusterFailover drives
// it.
type clusterPlatform struct {
	name, account, chat string
	args                []string // 'sluice relay' arguments besides the common ones
	stateDir            func(t *testing.T) string
	say                 func(text string)
	sent                func() []string
	waitSent            func(ctx context.Context, n int) ([]string, error)
	// check looks at what was sent beyond the texts.
	check func(t *testing.T)
}

func telegramPlatform(t *testing.T) clusterPlatform {
	tg := telegramfake.New()
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)
	texts := func(sent []telegramfake.Sent) []string {
		var out []string
		for _, m := range sent {
			out = append(out, m.Text)
		}
		return out
	}
	return clusterPlatform{
		name: "telegram", account: "telegram/123456", chat: "5",
		args:     []string{"--base-url", srv.URL, "--allow", "5", "--chat-interval", "0"},
		stateDir: func(t *testing.T) string { return t.TempDir() },
		say:      func(text string) { tg.UserSays(5, text) },
		sent:     func() []string { return texts(tg.Sent()) },
		waitSent: func(ctx context.Context, n int) ([]string, error) {
			sent, err := tg.WaitSent(ctx, n)
			return texts(sent), err
		},
		check: func(*testing.T) {},
	}
}

func wechatPlatform(t *testing.T) clusterPlatform {
	wc := wechatfake.New()
	srv := httptest.NewServer(wc)
	t.Cleanup(srv.Close)
	texts := func(sent []wechatfake.Sent) []string {
		var out []string
		for _, m := range sent {
			out = append(out, m.Text)
		}
		return out
	}
	const user = "owner@im.wechat"
	return clusterPlatform{
		name: "wechat", account: "wechat/bot", chat: user,
		args: []string{"--base-url", srv.URL},
		stateDir: func(t *testing.T) string {
			// Each node's copy of what 'sluice relay wechat login' wrote.
			dir := t.TempDir()
			creds := wechat.Credentials{Token: wechatfake.Token, BotID: "bot", BaseURL: srv.URL, UserID: user}
			if err := wechat.SaveCredentials(credentialsPath(dir), creds); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		say:  func(text string) { wc.UserSays(user, text, "ctx-1") },
		sent: func() []string { return texts(wc.Sent()) },
		waitSent: func(ctx context.Context, n int) ([]string, error) {
			sent, err := wc.WaitSent(ctx, n)
			return texts(sent), err
		},
		// WeChat answers only with the conversation's context token, which
		// the node that received the question stored: the survivor read
		// it from PostgreSQL.
		check: func(t *testing.T) {
			for _, m := range wc.Sent() {
				if m.To != user || m.ContextToken != "ctx-1" {
					t.Errorf("sent %+v without the conversation's context token", m)
				}
			}
		},
	}
}

// TestClusterFailover runs two `sluice relay` nodes on one bot account
// (Telegram, WeChat), one NATS server and one PostgreSQL database. One
// node holds the channel; the user asks two questions, and while the
// agent is answering the first (the model holds its stream open) the
// holder is killed with SIGKILL. The other node takes the channel when
// the lease expires and, from the shared store, tells the chat the first
// answer was cut off and answers the second; a third question is answered
// in the chat's session as the dead node left it. Every question gets
// exactly one reply, and no reply is sent twice. For Telegram, a `sluice
// serve` node then opens the chat's session: a session of the cluster.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	for _, platform := range []func(*testing.T) clusterPlatform{telegramPlatform, wechatPlatform} {
		p := platform(t)
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			testClusterFailover(t, p)
		})
	}
}

func testClusterFailover(t *testing.T, p clusterPlatform) {
	bin := testbin.Sluice(t)
	nats := natstest.URL(t) // a cluster of its own (sessions, sweepers)
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	held := make(chan struct{}, 1)
	var mu sync.Mutex
	var requests []fakemodel.Request
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		mu.Lock()
		requests = append(requests, r)
		mu.Unlock()
		if strings.Contains(r.LastUserText, "first question") && !strings.Contains(r.LastUserText, "second") {
			select {
			case held <- struct{}{}:
			default:
			}
			// Streams a little, then holds until the request ends
			// (the node dies).
			return fakemodel.Answer{Text: []string{"Thinking ", "about it"}, HoldAfter: 1, Release: make(chan struct{})}
		}
		last := r.LastUserText
		if i := strings.LastIndex(last, "question"); i >= 0 {
			last = last[max(0, i-7):]
		}
		return fakemodel.Answer{Text: []string{"Answer to " + last}}
	})
	defer fm.Close()

	home := t.TempDir()
	env := append(os.Environ(), "TELEGRAM_BOT_TOKEN="+telegramfake.Token, "ANTHROPIC_API_KEY=test-key",
		"ANTHROPIC_BASE_URL="+fm.URL(), "SLUICE_HOME="+home, "HOME="+home, "XDG_CONFIG_HOME="+home)
	work := t.TempDir()
	nodes := map[string]*relayNode{}
	for _, id := range []string{"r1", "r2"} {
		args := append([]string{p.name, "--state-dir", p.stateDir(t), "--workdir", work, "--min-interval", "0", "--silence", "0",
			"-v", "--nats", nats, "--postgres", dsn, "--lease-ttl", "2s"}, p.args...)
		nodes[id] = startRelayNode(t, bin, id, args, env)
	}
	logOnFailure(t, nodes)

	pg, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	key := "relay/" + p.account
	holder := channelHolder(t, ctx, pg, key)
	poll := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	var first string
	poll("a node to hold the channel", func() bool {
		for id, n := range nodes {
			select {
			case <-n.done:
				t.Fatalf("node %s exited: %v", id, n.err)
			default:
			}
		}
		first = holder()
		return first != ""
	})
	other := map[string]string{"r1": "r2", "r2": "r1"}[first]

	p.say("first question, please")
	p.say("second question")
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the model was never asked")
	}
	// Both questions are in the shared inbox, the first being answered.
	st, err := store.OpenPostgres(ctx, dsn, p.account)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	poll("both questions in the shared inbox", func() bool {
		qs, err := st.Questions(ctx, p.name)
		return err == nil && len(qs) == 2 && qs[0].Started && !qs[1].Started
	})

	n := nodes[first]
	killed := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done
	poll("the other node to take the channel", func() bool { return holder() == other })
	takeover := time.Since(killed)
	sent, err := p.waitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	firstReply := time.Since(killed)
	t.Logf("kill -9 of %s → %s holds the channel: %v; → first message to the chat: %v", first, other, takeover, firstReply)
	if takeover > 2*time.Second+2*time.Second {
		t.Errorf("takeover took %v, more than the TTL (2 s) + 2 s", takeover)
	}
	if !strings.Contains(sent[0], "cut off") || !strings.Contains(sent[0], "first question, please") {
		t.Errorf("first message after the failover: %q, want the cut-off notice", sent[0])
	}
	if sent[1] != "Answer to second question" {
		t.Errorf("second message: %q", sent[1])
	}

	p.say("third question")
	if sent, err = p.waitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if sent[2] != "Answer to third question" {
		t.Errorf("third message: %q", sent[2])
	}
	// The survivor sends a chat's messages in order: everything it had to
	// send came before the third answer; the dead node sends nothing.
	if got := p.sent(); len(got) != 3 {
		t.Errorf("%d messages sent, want 3 (one per question): %q", len(got), got)
	}
	p.check(t)
	mu.Lock()
	// The second question was answered in the chat's session as the dead
	// node left it: its request carries the first question.
	var restored bool
	for _, r := range requests {
		if strings.Contains(r.LastUserText, "second question") {
			restored = r.Messages >= 2 || strings.Contains(r.LastUserText, "first question")
		}
	}
	mu.Unlock()
	if !restored {
		t.Errorf("the survivor did not restore the chat's session: %+v", requests)
	}
	// One session for the chat, across both nodes, in the cluster's
	// session store, listed as `sluice serve` lists it.
	infos, err := agent.ListSessions(ctx, pg, work)
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions of the relay's working directory: %+v %v, want the chat's one", infos, err)
	}
	session, err := st.Get(ctx, backend.SessionKey(p.chat))
	if err != nil || session != infos[0].ID {
		t.Errorf("the chat's session %q (%v), listed %q", session, err, infos[0].ID)
	}
	if p.name == "telegram" {
		// A serve node opens it from the log: run by the survivor, the
		// interrupted run ended visibly, then the two answers.
		serve, err := clustertest.Start(ctx, clustertest.NodeConfig{Bin: bin, NATS: nats, Postgres: dsn, ModelURL: fm.URL(),
			Home: t.TempDir(), LeaseTTL: 2 * time.Second}, "s1")
		if err != nil {
			t.Fatal(err)
		}
		defer serve.Kill()
		snap, owner, err := clustertest.Snapshot(ctx, serve.WS, session)
		if err != nil {
			t.Fatal(err)
		}
		if owner != other {
			t.Errorf("the chat's session is run by %q, want %q", owner, other)
		}
		var users, answers []string
		interrupted := false
		for _, m := range snap.Messages {
			for _, b := range m.Blocks {
				switch {
				case m.Role == protocol.RoleUser && b.Type == protocol.BlockText:
					users = append(users, b.Content)
				case m.Role == protocol.RoleAssistant && b.Type == protocol.BlockText && strings.HasPrefix(b.Content, "Answer"):
					answers = append(answers, b.Content)
				case b.Type == protocol.BlockError && len(users) == 1:
					interrupted = true
				}
			}
		}
		if strings.Join(users, "|") != "first question, please|second question|third question" ||
			strings.Join(answers, "|") != "Answer to second question|Answer to third question" || !interrupted {
			t.Errorf("the chat's session as a serve node sees it: users %q, answers %q, interrupted %v", users, answers, interrupted)
		}
	}

	// A graceful stop releases the channel and exits 0.
	survivor := nodes[other]
	survivor.cmd.Process.Signal(os.Interrupt)
	select {
	case <-survivor.done:
	case <-ctx.Done():
		t.Fatal("the survivor did not stop")
	}
	if survivor.err != nil {
		t.Errorf("survivor's exit: %v", survivor.err)
	}
	if h := holder(); h != "" {
		t.Errorf("after a graceful stop the channel is still held by %q", h)
	}
}

// TestClusterCommandLine: cluster mode's flags (and the settings file's
// keys) are checked before anything runs — one engine without the other,
// a NATS server or a database that cannot be reached are clear errors
// (the DSN's password never shown), and a node that cannot bind its
// webhook exits 1.
func TestClusterCommandLine(t *testing.T) {
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	nats := natsURL(t)
	// A database nothing listens at: every case fails before it would
	// be used, so that this test, which cannot run in parallel, does not
	// wait for a PostgreSQL server.
	const dsn = "postgres://u:hunter2@127.0.0.1:1/db"
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	settings := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(settings, []byte(`{"nats": "nats://127.0.0.1:1", "postgres": "postgres://u:hunter2@127.0.0.1:1/db", "nodeId": "from-settings"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TELEGRAM_BOT_TOKEN", telegramfake.Token)
	t.Setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret")
	t.Setenv("SLUICE_FAKE_CLAUDE_DIR", runs(t))
	for _, tt := range []struct {
		name     string
		settings string
		args     []string
		code     int
		want     string
	}{
		{"nats without postgres", "", []string{"--nats", nats}, 2, "needs --postgres"},
		{"postgres without nats", "", []string{"--postgres", dsn}, 2, "needs --nats"},
		{"NATS unreachable", "", []string{"--nats", "nats://127.0.0.1:1", "--postgres", dsn}, 1, "cluster: NATS"},
		{"database unreachable", "", []string{"--nats", nats, "--postgres", dsn}, 1, "cluster: PostgreSQL"},
		{"bad DSN", "", []string{"--nats", nats, "--postgres", "postgres://u:hunter2@127.0.0.1:notaport/db"}, 1, "cluster: PostgreSQL"},
		{"settings file", settings, nil, 1, "cluster: NATS"},
		{"webhook address taken", "", []string{"--nats", nats, "--postgres", dsn,
			"--webhook-url", "https://example.test/hook", "--webhook-listen", taken.Addr().String()}, 1, "address already in use"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLUICE_CONFIG", tt.settings)
			if tt.settings == "" {
				t.Setenv("SLUICE_CONFIG", filepath.Join(t.TempDir(), "none.json"))
			}
			args := append([]string{"telegram", "--state-dir", t.TempDir(), "--base-url", srv.URL, "--allow", "42",
				"--backend", "claude", "--claude-bin", os.Args[0]}, tt.args...)
			var stderr bytes.Buffer
			code := runRelay(waitCtx(t), testbin.Sluice(t), args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.want)
			}
			if strings.Contains(stderr.String(), "hunter2") {
				t.Error("the database password is in the output")
			}
		})
	}
}

// TestClusterWebhook: two relay nodes receiving by webhook, the test
// playing Telegram (it posts each update, and posts it again while it is
// answered 503: before the nodes listen). An update posted to the node
// that does not hold the channel is answered by the holder, once, as is
// one posted to the holder; an update posted twice is answered once. (A
// webhook during a failover — 503 until a node holds the channel — is
// TestWebhookForwarding's; the failover itself TestClusterFailover's.)
func TestClusterWebhook(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	nats := natstest.URL(t) // a cluster of its own (sessions, sweepers)
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: []string{"Re: " + r.LastUserText}}
	})
	defer fm.Close()
	tg := telegramfake.New()
	tgSrv := httptest.NewServer(tg)
	defer tgSrv.Close()
	home := t.TempDir()
	const secret = "hook-secret"
	env := append(os.Environ(), "TELEGRAM_BOT_TOKEN="+telegramfake.Token, "TELEGRAM_WEBHOOK_SECRET="+secret,
		"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL="+fm.URL(), "SLUICE_HOME="+home, "HOME="+home, "XDG_CONFIG_HOME="+home)
	work := t.TempDir()
	nodes := map[string]*relayNode{}
	hooks := map[string]string{}
	for _, id := range []string{"w1", "w2"} {
		addr := freeAddr(t)
		hooks[id] = "http://" + addr + "/"
		nodes[id] = startRelayNode(t, bin, id, []string{"telegram", "--state-dir", t.TempDir(), "--base-url", tgSrv.URL, "--allow", "5",
			"--workdir", work, "--min-interval", "0", "--chat-interval", "0", "--silence", "0", "-v",
			"--nats", nats, "--postgres", dsn, "--lease-ttl", "2s",
			"--webhook-url", "https://bot.example.test/hook", "--webhook-listen", addr}, env)
	}
	logOnFailure(t, nodes)
	pg, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	holder := channelHolder(t, ctx, pg, "relay/telegram/123456")
	// deliver posts an update to node as Telegram does: again and again
	// while it is not taken (503, or the server not listening yet).
	deliver := func(node string, id int, text string) {
		t.Helper()
		body := fmt.Sprintf(`{"update_id": %d, "message": {"message_id": %d, "text": %q, "chat": {"id": 5}}}`, id, id, text)
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hooks[node], strings.NewReader(body))
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("update %d never taken by %s: %v", id, node, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	var first string
	for first == "" {
		first = holder()
		select {
		case <-ctx.Done():
			t.Fatal("no node holds the channel")
		case <-time.After(10 * time.Millisecond):
		}
	}
	other := map[string]string{"w1": "w2", "w2": "w1"}[first]
	deliver(other, 1, "question one")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "Re: question one" {
		t.Errorf("forwarded question's answer: %q", sent[0].Text)
	}

	// The holder's own webhook takes an update itself; the same update
	// posted again, to the other node (Telegram's at least once), is not
	// answered again.
	deliver(first, 2, "question two")
	deliver(other, 2, "question two")
	deliver(other, 3, "question three")
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := tg.Sent(); len(got) != 3 || got[1].Text != "Re: question two" || got[2].Text != "Re: question three" {
		t.Errorf("messages sent: %+v", got)
	}
	if wh := tg.Webhook(); wh != "https://bot.example.test/hook" {
		t.Errorf("webhook set: %q", wh)
	}
}

// freeAddr is a loopback address nothing listens on (the port of a
// listener just closed).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
