package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/sluicehq/sluice/internal/cluster/clustertest"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testbin"
)

// natsConf is the NATS configuration the README shows for a cluster: the
// nodes' user in an account of its own, allowed the cluster's subjects
// only.
const natsConf = "testdata/nats-accounts.conf"

// serverLog keeps what a NATS server logs at warning level and above:
// a permissions violation is an error of the server's.
type serverLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serverLog) add(format string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	l.mu.Unlock()
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *serverLog) Noticef(string, ...any)         {}
func (l *serverLog) Debugf(string, ...any)          {}
func (l *serverLog) Tracef(string, ...any)          {}
func (l *serverLog) Warnf(format string, v ...any)  { l.add(format, v...) }
func (l *serverLog) Errorf(format string, v ...any) { l.add(format, v...) }
func (l *serverLog) Fatalf(format string, v ...any) { l.add(format, v...) }

// TestSecretsKept runs two `sluice serve` nodes against a PostgreSQL role
// that needs a password and a NATS server with the README's accounts and
// permissions, the credentials given as the engines' own tools take them:
// node a reads its connection string from --postgres-file, node b has
// only the PG* variables; both log in to NATS with NATS_USER and
// NATS_PASSWORD. A session streams through them, restricted as they are.
// No password is in either node's /proc/PID/cmdline or log; a user of
// another account receives nothing of the cluster's subjects nor reaches
// its stream, and the nodes' user cannot subscribe outside them. A third
// node given a password in its --nats URL is warned, and its log shows
// the URL redacted.
func TestSecretsKept(t *testing.T) {
	t.Parallel()
	natsPassword, appPassword := "nats-pw-4b1d7e", "app-pw-93c2aa"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(natsConf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), string(conf)) {
		t.Fatalf("the README does not show %s as it is", natsConf)
	}

	bin := testbin.Sluice(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The configuration's passwords come from the server's environment;
	// here from variables defined before it, as a file may define them
	// (the environment is this test process's, shared).
	confFile := filepath.Join(t.TempDir(), "nats.conf")
	vars := fmt.Sprintf("SLUICE_NATS_PASSWORD: %q\nAPP_NATS_PASSWORD: %q\n", natsPassword, appPassword)
	if err := os.WriteFile(confFile, append([]byte(vars), conf...), 0o600); err != nil {
		t.Fatal(err)
	}
	var nlog serverLog
	ns, err := natstest.StartConfig(confFile, t.TempDir(), &nlog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	dsn, pgPassword := pgtest.PasswordDSN(t)

	// Another account's user listens to everything it can.
	app, err := nats.Connect(ns.ClientURL(), nats.UserInfo("app", appPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	var seen sync.Mutex
	var leaked []string
	for _, subj := range []string{"sluice.>", ">"} {
		if _, err := app.Subscribe(subj, func(m *nats.Msg) {
			seen.Lock()
			leaked = append(leaked, m.Subject)
			seen.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Flush(); err != nil {
		t.Fatal(err)
	}

	answer := fakemodel.NumberedAnswer(40)
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer { return fakemodel.Answer{Text: answer} })
	defer fm.Close()
	home := t.TempDir()
	dsnFile := filepath.Join(t.TempDir(), "postgres")
	if err := os.WriteFile(dsnFile, []byte(dsn+" password="+pgPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	natsEnv := []string{"NATS_USER=sluice", "NATS_PASSWORD=" + natsPassword}
	pgEnv := []string{"PGPASSWORD=" + pgPassword}
	for _, kv := range strings.Fields(dsn) {
		k, v, _ := strings.Cut(kv, "=")
		name := map[string]string{"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "dbname": "PGDATABASE", "sslmode": "PGSSLMODE"}[k]
		if name == "" {
			t.Fatalf("unexpected %q in the DSN", kv)
		}
		pgEnv = append(pgEnv, name+"="+v)
	}
	base := clustertest.NodeConfig{Bin: bin, NATS: ns.ClientURL(), ModelURL: fm.URL(), Home: home, LeaseTTL: 2 * time.Second, Verbose: true}
	cfgA, cfgB := base, base
	cfgA.Args, cfgA.Env = []string{"--postgres-file", dsnFile}, natsEnv
	cfgB.Env = append(append([]string{}, natsEnv...), pgEnv...)
	var nodes []*clustertest.Node
	defer stopNodes(t, &nodes)
	for i, cfg := range []clustertest.NodeConfig{cfgA, cfgB} {
		n, err := clustertest.Start(ctx, cfg, fmt.Sprintf("%c", 'a'+i))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}

	answerAcross(ctx, t, nodes, "go", strings.Join(answer, ""))
	if l := nlog.String(); strings.Contains(strings.ToLower(l), "violation") {
		t.Errorf("the nodes' user was refused something it needs:\n%s", l)
	}

	// The other account saw nothing and cannot reach the stream.
	if err := app.Flush(); err != nil {
		t.Fatal(err)
	}
	seen.Lock()
	if len(leaked) > 0 {
		t.Errorf("a user of another account received %d messages of the cluster: %q", len(leaked), leaked[:min(len(leaked), 5)])
	}
	seen.Unlock()
	if m, err := app.Request("$JS.API.STREAM.INFO.SLUICE_SESSIONS", nil, 5*time.Second); err == nil && !strings.Contains(string(m.Data), `"error"`) {
		t.Errorf("a user of another account reads the cluster's stream: %s", m.Data)
	}

	// The nodes' user is kept to the cluster's subjects.
	node, err := nats.Connect(ns.ClientURL(), nats.UserInfo("sluice", natsPassword), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if _, err := node.SubscribeSync("other.>"); err != nil {
		t.Fatal(err)
	}
	if err := node.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := node.LastError(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		t.Errorf("the nodes' user subscribed outside the cluster's subjects (last error %v)", err)
	}

	// A password on the command line is warned of and redacted in the log.
	cfgC := base
	cfgC.NATS = strings.Replace(ns.ClientURL(), "nats://", "nats://sluice:"+natsPassword+"@", 1)
	cfgC.Args = []string{"--postgres-file", dsnFile}
	c, err := clustertest.Start(ctx, cfgC, "c")
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, c)
	if !strings.Contains(c.Stderr(), "holds a password") {
		t.Errorf("node c was not warned of the password in --nats:\n%s", c.Stderr())
	}

	for _, n := range nodes {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n.PID()))
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range []string{pgPassword, natsPassword} {
			if n != c && strings.Contains(string(cmdline), pw) {
				t.Errorf("node %s: a password is in /proc/PID/cmdline: %q", n.ID, cmdline)
			}
			if strings.Contains(n.Stderr(), pw) {
				t.Errorf("node %s logged a password", n.ID)
			}
		}
	}
}

// operator is a NATS server in operator mode, as `nsc` sets one up: an
// operator trusted by the server, a system account, and the cluster's
// account with JetStream, its JWTs preloaded in a memory resolver; the
// nodes' user is a JWT signed by the cluster's account, kept with its
// seed in a .creds file.
type operator struct {
	server *server.Server
	creds  []byte // the nodes' .creds file
	seed   string // the nodes' user's seed: the secret of the creds
}

func startOperator(t *testing.T) operator {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	key := func(create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, string) {
		kp, err := create()
		must(err)
		pub, err := kp.PublicKey()
		must(err)
		return kp, pub
	}
	okp, opub := key(nkeys.CreateOperator)
	_, spub := key(nkeys.CreateAccount)
	akp, apub := key(nkeys.CreateAccount)
	ukp, upub := key(nkeys.CreateUser)

	oc := jwt.NewOperatorClaims(opub)
	oc.SystemAccount = spub
	_, err := oc.Encode(okp)
	must(err)
	resolver := &server.MemAccResolver{}
	sys, err := jwt.NewAccountClaims(spub).Encode(okp)
	must(err)
	must(resolver.Store(spub, sys))
	ac := jwt.NewAccountClaims(apub)
	ac.Name = "SLUICE"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	acc, err := ac.Encode(okp)
	must(err)
	must(resolver.Store(apub, acc))
	// The README's permissions for a node's user, in its JWT.
	uc := jwt.NewUserClaims(upub)
	uc.Name = "sluice"
	uc.Pub.Allow.Add("sluice.>", "$JS.API.>", "$KV.sluice-sessions.>", "$JS.ACK.>", "$JS.FC.>", "_INBOX.>")
	uc.Sub.Allow.Add("sluice.>", "_INBOX.>")
	user, err := uc.Encode(akp)
	must(err)
	seed, err := ukp.Seed()
	must(err)
	creds, err := jwt.FormatUserConfig(user, seed)
	must(err)

	opts := &server.Options{TrustedOperators: []*jwt.OperatorClaims{oc}, SystemAccount: spub, AccountResolver: resolver}
	ns, err := natstest.StartOptions(opts, t.TempDir(), nil)
	must(err)
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return operator{server: ns, creds: creds, seed: string(seed)}
}

// TestSecretsFromFiles runs two `sluice serve` nodes in cluster mode
// given their credentials only as files, the way `nsc` and libpq keep
// them: NATS_CREDS names a .creds file (user JWT and seed) for a NATS
// server in operator mode, PGPASSFILE a pgpass file (mode 0600) for a
// PostgreSQL role that needs a password, PGHOST, PGPORT, PGUSER and
// PGDATABASE the rest. A session started on one node and sent from the
// other runs Bash `env`, then streams its answer to both. No secret
// (the seed, the password) is in the nodes' /proc/PID/cmdline, their
// logs, or the environment Bash was given, nor are the variables naming
// the credentials' files (the nats CLI reads NATS_CREDS, psql
// PGPASSFILE: a command would log in as the node).
func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	bin := testbin.Sluice(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	op := startOperator(t)
	dsn, pgPassword := pgtest.PasswordDSN(t)

	dir := t.TempDir()
	credsFile, passFile := filepath.Join(dir, "node.creds"), filepath.Join(dir, "pgpass")
	if err := os.WriteFile(credsFile, op.creds, 0o600); err != nil {
		t.Fatal(err)
	}
	pg := map[string]string{}
	env := []string{"NATS_CREDS=" + credsFile, "PGPASSFILE=" + passFile}
	for _, kv := range strings.Fields(dsn) {
		k, v, _ := strings.Cut(kv, "=")
		name := map[string]string{"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "dbname": "PGDATABASE", "sslmode": "PGSSLMODE"}[k]
		if name == "" {
			t.Fatalf("unexpected %q in the DSN", kv)
		}
		pg[k] = v
		env = append(env, name+"="+v)
	}
	// A Unix socket's host is "localhost" in a pgpass file, as libpq
	// reads it.
	line := fmt.Sprintf("localhost:%s:%s:%s:%s\n", pg["port"], pg["dbname"], pg["user"], pgPassword)
	if err := os.WriteFile(passFile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}

	answer := fakemodel.NumberedAnswer(40)
	var mu sync.Mutex
	var bashEnv string
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		if r.ToolResult != "" {
			mu.Lock()
			bashEnv = r.ToolResult
			mu.Unlock()
			return fakemodel.Answer{Text: answer}
		}
		return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_env", Name: "Bash", Input: map[string]any{"command": "env"}}}
	})
	defer fm.Close()
	cfg := clustertest.NodeConfig{Bin: bin, NATS: op.server.ClientURL(), ModelURL: fm.URL(), Home: t.TempDir(),
		LeaseTTL: 2 * time.Second, Verbose: true, Env: env, Args: []string{"--dangerously-skip-permissions"}}
	var nodes []*clustertest.Node
	defer stopNodes(t, &nodes)
	for _, id := range []string{"a", "b"} {
		n, err := clustertest.Start(ctx, cfg, id)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}

	answerAcross(ctx, t, nodes, "go", strings.Join(answer, ""))

	mu.Lock()
	childEnv := bashEnv
	mu.Unlock()
	if !strings.Contains(childEnv, "PATH=") {
		t.Fatalf("Bash's environment did not reach the model: %q", childEnv)
	}
	secrets := map[string]string{"the NATS user's seed": op.seed, "the PostgreSQL password": pgPassword}
	for what, secret := range secrets {
		if strings.Contains(childEnv, secret) {
			t.Errorf("%s is in the environment Bash was given", what)
		}
		for _, n := range nodes {
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n.PID()))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(cmdline), secret) {
				t.Errorf("node %s: %s is in /proc/PID/cmdline", n.ID, what)
			}
			if strings.Contains(n.Stderr(), secret) {
				t.Errorf("node %s logged %s", n.ID, what)
			}
		}
	}
	for _, name := range []string{"NATS_CREDS", "PGPASSFILE"} {
		if strings.Contains("\n"+childEnv, "\n"+name+"=") {
			t.Errorf("%s is in the environment Bash was given:\n%s", name, childEnv)
		}
	}
}

// answerAcross starts a session on the first node, sends it text from a
// client of the second, and checks that both clients end with the answer
// want.
func answerAcross(ctx context.Context, t *testing.T, nodes []*clustertest.Node, text, want string) {
	t.Helper()
	own, err := clustertest.Attach(ctx, nodes[0].WS, "")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	other, err := clustertest.Attach(ctx, nodes[1].WS, own.Session)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Call(ctx, "sendMessage", map[string]any{"sessionId": other.Session, "text": text}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*clustertest.Client{own, other} {
		if err := c.WaitIdle(ctx, 0); err != nil {
			t.Fatal(err)
		}
		st, err := c.State()
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Messages[len(st.Messages)-1].Text(); got != want {
			t.Fatalf("the answer through the cluster is %q, want %q", got, want)
		}
	}
}

// stopNodes stops the nodes *nodes holds when it runs (deferred, the ones
// started by then), with their logs when the test failed.
func stopNodes(t *testing.T, nodes *[]*clustertest.Node) {
	for _, n := range *nodes {
		if _, err := n.Stop(); err != nil {
			t.Errorf("node %s: %v\n%s", n.ID, err, n.Stderr())
		}
		if t.Failed() {
			t.Logf("node %s log:\n%s", n.ID, n.Stderr())
		}
	}
}
