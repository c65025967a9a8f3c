package relay

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/cluster"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode"
	"github.com/sluicehq/sluice/internal/relay/backend/sluiceagent"
	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/protocol"
	sessionstore "github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

const usage = `Usage:
  sluice relay wechat [flags]          relay WeChat chats to the agent
  sluice relay wechat login [flags]    log the WeChat bot in (QR code)
  sluice relay telegram [flags]        relay Telegram chats (TELEGRAM_BOT_TOKEN)
  sluice relay simulate --channel wechat|telegram FILE
                                       print the messages a recorded run
                                       (stream-json) would be delivered as
Run 'sluice relay <command> -h' for the flags.`

// Main is 'sluice relay'. It returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "simulate":
		return simulateMain(args[1:], stdout, stderr)
	case "wechat":
		if len(args) > 1 && args[1] == "login" {
			return loginMain(ctx, args[2:], stdout, stderr)
		}
		return runMain(ctx, "wechat", args[1:], stdout, stderr)
	case "telegram":
		return runMain(ctx, "telegram", args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice relay: unknown command %q\n%s\n", args[0], usage)
	return 2
}

func simulateMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice relay simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ch := fs.String("channel", "wechat", "channel whose limit applies: wechat (4000) or telegram (4096)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	limits := map[string]int{"wechat": split.WeChatLimit, "telegram": split.TelegramLimit}
	limit, ok := limits[*ch]
	if !ok || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: sluice relay simulate --channel wechat|telegram FILE")
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "sluice relay simulate:", err)
		return 1
	}
	defer f.Close()
	ps, err := Simulate(f, limit)
	if err != nil {
		fmt.Fprintln(stderr, "sluice relay simulate:", err)
		return 1
	}
	if err := WritePreviews(stdout, ps); err != nil {
		fmt.Fprintln(stderr, "sluice relay simulate:", err)
		return 1
	}
	return 0
}

// defaultStateDir is $XDG_DATA_HOME/sluice/relay, else
// ~/.local/share/sluice/relay, else the user config dir's sluice/relay.
func defaultStateDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sluice", "relay")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "sluice", "relay")
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "sluice", "relay")
	}
	return "sluice-relay"
}

func credentialsPath(stateDir string) string {
	return filepath.Join(stateDir, "wechat-credentials.json")
}

func loginMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice relay wechat login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", defaultStateDir(), "where the relay keeps its state and the credentials")
	baseURL := fs.String("base-url", wechat.DefaultBaseURL, "WeChat bot API base URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, err := login(ctx, *stateDir, *baseURL, stdout); err != nil {
		fmt.Fprintln(stderr, "sluice relay wechat login:", err)
		return 1
	}
	return 0
}

func login(ctx context.Context, stateDir, baseURL string, out io.Writer) (wechat.Credentials, error) {
	var tokens []string
	if old, err := wechat.LoadCredentials(credentialsPath(stateDir)); err == nil {
		tokens = append(tokens, old.Token)
	}
	creds, err := wechat.Login(ctx, wechat.LoginConfig{
		BaseURL: baseURL,
		Tokens:  tokens,
		Show: func(content, term string) {
			fmt.Fprintf(out, "Scan this QR code with WeChat (or open %s):\n%s\n", content, term)
		},
		Scanned: func() { fmt.Fprintln(out, "Scanned; confirm in WeChat…") },
	})
	if err != nil {
		return creds, err
	}
	if err := wechat.SaveCredentials(credentialsPath(stateDir), creds); err != nil {
		return creds, err
	}
	fmt.Fprintf(out, "Logged in as bot %s; owner %s. Credentials saved in %s.\n", creds.BotID, creds.UserID, credentialsPath(stateDir))
	return creds, nil
}

// runFlags are the flags of 'sluice relay wechat|telegram'.
type runFlags struct {
	stateDir, baseURL, backend, claudeBin, model, permissionMode, workDir, provider string
	allow                                                                           string
	allowAll, interrupt, verbose                                                    bool
	silence, typingEvery                                                            time.Duration
	minInterval, chatInterval, cooldown, breakerOpen, sendTimeout                   time.Duration
	breakerFailures, dailyBudget                                                    int
	webhookURL, webhookListen                                                       string
	cluster                                                                         cli.ClusterFlags
	childEnv                                                                        cli.ChildEnvFlags
	// env is the child-environment policy: settings with childEnv's flags.
	env childenv.Policy
}

func runMain(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice relay "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	pacing := deliver.WeChatPacing()
	defaultBase := wechat.DefaultBaseURL
	if name == "telegram" {
		pacing = deliver.TelegramPacing()
		defaultBase = telegram.DefaultBaseURL
	}
	var f runFlags
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "where the relay keeps undelivered messages, cursors and sessions")
	fs.StringVar(&f.baseURL, "base-url", "", "the platform's API base URL (default "+defaultBase+")")
	fs.StringVar(&f.backend, "backend", "sluice", "agent backend: sluice (the built-in agent) or claude (Claude Code)")
	fs.StringVar(&f.claudeBin, "claude-bin", "claude", "the Claude Code executable (backend claude)")
	fs.StringVar(&f.provider, "provider", "", "model provider of the sluice backend: "+strings.Join(provider.Names, ", ")+" (default: from the environment, as sluice's)")
	fs.StringVar(&f.model, "model", "", "model (default: the backend's)")
	fs.StringVar(&f.permissionMode, "permission-mode", "default", "default (approvals asked in the chat), acceptEdits, bypassPermissions or plan")
	fs.StringVar(&f.workDir, "workdir", "", "the agent's working directory (default: the current one)")
	fs.StringVar(&f.allow, "allow", "", "comma-separated chat ids allowed to use the agent")
	fs.BoolVar(&f.allowAll, "allow-all", false, "let every chat use the agent (it runs tools on this machine!)")
	fs.BoolVar(&f.interrupt, "interrupt", false, "a new message aborts the run in progress instead of waiting")
	fs.DurationVar(&f.silence, "silence", 5*time.Minute, "say \"still working\" after this long without a message (0: never)")
	fs.DurationVar(&f.typingEvery, "typing-every", 5*time.Second, "refresh the typing indicator this often")
	fs.DurationVar(&f.minInterval, "min-interval", pacing.MinInterval, "least time between two messages of the bot")
	fs.DurationVar(&f.chatInterval, "chat-interval", pacing.ChatInterval, "least time between two messages to one chat")
	fs.DurationVar(&f.cooldown, "cooldown", pacing.Cooldown, "pause after the platform's throttling error")
	fs.IntVar(&f.breakerFailures, "breaker-failures", pacing.BreakerFailures, "failures in a row that open the circuit (0: no breaker)")
	fs.DurationVar(&f.breakerOpen, "breaker-open", pacing.BreakerOpen, "how long an open circuit stops sending")
	fs.DurationVar(&f.sendTimeout, "send-timeout", pacing.SendTimeout, "give up on a send the platform does not answer within this (it is tried again)")
	fs.IntVar(&f.dailyBudget, "daily-budget", 0, "most messages sent per day (0: no cap)")
	fs.BoolVar(&f.verbose, "v", false, "log debugging detail")
	if name == "telegram" {
		fs.StringVar(&f.webhookURL, "webhook-url", "", "receive by webhook at this public HTTPS URL instead of long polling (secret: TELEGRAM_WEBHOOK_SECRET)")
		fs.StringVar(&f.webhookListen, "webhook-listen", "127.0.0.1:8443", "address the webhook server listens on")
	}
	f.cluster.Register(fs)
	f.childEnv.Register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice relay %s: unexpected arguments %q\n", name, fs.Args())
		return 2
	}
	clustered, err := f.cluster.Resolve(os.Getenv)
	if err == nil {
		var conf cli.Config
		if conf, err = cli.LoadConfig(cli.ConfigPath(os.Getenv)); err == nil {
			f.env, err = f.childEnv.Policy(conf)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice relay %s: %v\n", name, err)
		return 2
	}
	pacing.MinInterval, pacing.ChatInterval, pacing.Cooldown = f.minInterval, f.chatInterval, f.cooldown
	pacing.BreakerFailures, pacing.BreakerOpen, pacing.DailyBudget = f.breakerFailures, f.breakerOpen, f.dailyBudget
	pacing.SendTimeout = f.sendTimeout
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := run(ctx, name, f, clustered, pacing, log, stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "sluice relay %s: %v\n", name, err)
		return 1
	}
	return 0
}

func run(ctx context.Context, name string, f runFlags, clustered bool, pacing deliver.Pacing, log *slog.Logger, stdout io.Writer) error {
	if err := os.MkdirAll(f.stateDir, 0o700); err != nil {
		return err
	}
	var allow []string
	for _, a := range strings.Split(f.allow, ",") {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	// The account's state: a file of this machine's, or — in cluster
	// mode — PostgreSQL's, shared by the account's nodes. The channel
	// reads its credentials before the store is opened: the account's
	// name is the bot's id.
	var (
		st   *store.Store
		node *Cluster
		pg   *pgstore.Store
		nc   *nats.Conn
		err  error
	)
	openStore := func(account string) error {
		if !clustered {
			st, err = store.Open(ctx, filepath.Join(f.stateDir, name+".db"))
			return err
		}
		f.cluster.WarnCommandLine(log)
		natsOpts, err := f.cluster.NATSOptions(os.Getenv, log)
		if err != nil {
			return fmt.Errorf("cluster: NATS: %w", err)
		}
		if nc, err = nats.Connect(f.cluster.NATS, append(natsOpts, nats.Name("sluice relay "+f.cluster.NodeID), nats.MaxReconnects(-1))...); err != nil {
			return fmt.Errorf("cluster: NATS: %w", err)
		}
		if pg, err = pgstore.Open(ctx, f.cluster.Postgres); err != nil {
			// The DSN may hold a password: it is not repeated.
			return fmt.Errorf("cluster: PostgreSQL: %w", err)
		}
		if st, err = store.OpenPostgres(ctx, f.cluster.Postgres, account); err != nil {
			return fmt.Errorf("cluster: PostgreSQL: %w", err)
		}
		ttl := f.cluster.LeaseTTL
		if ttl == 0 {
			ttl = cluster.DefaultLeaseTTL // as the sessions'
		}
		node = &Cluster{Leases: pg, Store: st, Key: "relay/" + account, Node: f.cluster.NodeID, TTL: ttl, Logger: log}
		return nil
	}
	defer func() {
		if st != nil {
			st.Close()
		}
		if pg != nil {
			pg.Close()
		}
		if nc != nil {
			nc.Close()
		}
	}()
	// In cluster mode with a webhook, the node's webhook server: its
	// failure stops the node (stopServing's cause).
	stopServing := context.CancelCauseFunc(func(error) {})
	var served chan struct{} // closed when the server stopped; nil: none
	defer func() {
		stopServing(nil)
		if served != nil {
			<-served
		}
	}()
	var ch channel.Channel
	switch name {
	case "wechat":
		base := f.baseURL
		creds, err := wechat.LoadCredentials(credentialsPath(f.stateDir))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stdout, "No WeChat login yet.")
			if base == "" {
				base = wechat.DefaultBaseURL
			}
			creds, err = login(ctx, f.stateDir, base, stdout)
		}
		if err != nil {
			return err
		}
		if base == "" {
			base = creds.BaseURL
		}
		if len(allow) == 0 && !f.allowAll && creds.UserID != "" {
			// The bot's owner: who scanned the login code.
			allow = []string{creds.UserID}
		}
		if err := openStore("wechat/" + creds.BotID); err != nil {
			return err
		}
		ch = wechat.New(wechat.Config{BaseURL: base, Token: creds.Token, BotID: creds.BotID, KV: st, Logger: log})
	case "telegram":
		token := os.Getenv("TELEGRAM_BOT_TOKEN")
		if token == "" {
			return errors.New("set TELEGRAM_BOT_TOKEN (from @BotFather)")
		}
		// The bot's id is the token's part before the colon (not secret).
		botID, _, _ := strings.Cut(token, ":")
		var ln net.Listener
		if f.webhookURL != "" && clustered {
			// Every node serves the webhook for as long as it runs,
			// holding the channel or not: bound first, so that a node
			// that cannot listen fails at once.
			if ln, err = net.Listen("tcp", f.webhookListen); err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
			defer func() {
				if served == nil { // the start failed before serving it
					ln.Close()
				}
			}()
		}
		if err := openStore("telegram/" + botID); err != nil {
			return err
		}
		tg := telegram.New(telegram.Config{BaseURL: f.baseURL, Token: token, KV: st, Logger: log})
		ch = tg
		if f.webhookURL != "" {
			secret := os.Getenv("TELEGRAM_WEBHOOK_SECRET")
			if secret == "" {
				return errors.New("a webhook needs TELEGRAM_WEBHOOK_SECRET")
			}
			if node != nil {
				fw := newForwarder(nc, "telegram/"+botID, 5*time.Second)
				ctx, stopServing = context.WithCancelCause(ctx)
				served = make(chan struct{})
				go func(ctx context.Context) {
					defer close(served)
					if err := serveWebhook(ctx, ln, telegram.WebhookHandler(secret, fw.accept)); err != nil {
						stopServing(err)
					}
				}(ctx)
				ch = &clusterWebhook{Client: tg, fw: fw}
			} else {
				ch = &webhookChannel{Client: tg, secret: secret, listen: f.webhookListen, log: log}
			}
			if err := tg.SetWebhook(ctx, f.webhookURL, secret); err != nil {
				return err
			}
		}
	}
	if len(allow) == 0 && !f.allowAll {
		return errors.New("say which chats may use the agent with --allow ID[,ID] (a stranger's message is answered with its id), or --allow-all")
	}
	silence := f.silence
	if silence == 0 {
		silence = -1
	}
	// term relays until ctx ends: the whole run of a single process, or
	// one holding of the channel's lease in cluster mode.
	agentSet, err := setUpAgent(f, pg, log)
	if err != nil {
		return err
	}
	if node != nil && agentSet.options != nil {
		// The chats' sessions run on this process's cluster node, which
		// also takes over, while standing by, the sessions of a node
		// that died mid-run.
		if agentSet.host, err = cluster.Start(ctx, cluster.Config{
			NodeID: f.cluster.NodeID, NATS: nc, Leases: cluster.PG(pg), LeaseTTL: node.TTL, Logger: log,
			Options: func(_ context.Context, dir string) (agent.Options, error) { return agentSet.options(dir), nil },
		}); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		defer agentSet.host.Close()
	}
	term := func(ctx context.Context) error {
		be := newBackend(f, agentSet, st, log)
		defer be.Close()
		r, err := New(ctx, Options{
			Channel: ch, Backend: be, Store: st, Pacing: pacing, Logger: log,
			Allow: allow, Silence: silence, TypingEvery: f.typingEvery, Interrupt: f.interrupt,
		})
		if err != nil {
			return err
		}
		log.Info("relay: running", "channel", name, "backend", be.Name(), "allowed", allow)
		return r.Run(ctx)
	}
	if node == nil {
		return term(ctx)
	}
	log.Info("relay: cluster mode", "node", f.cluster.NodeID, "lease", node.Key, "ttl", node.TTL)
	err = node.Hold(ctx, term)
	if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, context.Canceled) {
		return cause // the webhook server failed
	}
	return err
}

// agentSetup is what the agent backend is made of, set up once per
// process: the working directory, and for the sluice backend its
// sessions' options and — in cluster mode — the cluster node that runs
// them.
type agentSetup struct {
	workDir string
	options func(workDir string) agent.Options // sluice backend
	host    *cluster.Node                      // cluster mode, sluice backend
}

// setUpAgent checks the backend flags and sets up the sluice agent's
// sessions: in JSONL files, or in PostgreSQL (pg) in cluster mode.
func setUpAgent(f runFlags, pg *pgstore.Store, log *slog.Logger) (agentSetup, error) {
	a := agentSetup{workDir: f.workDir}
	if a.workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return a, err
		}
		a.workDir = wd
	}
	switch f.backend {
	case "claude":
		return a, nil
	case "sluice":
	default:
		return a, fmt.Errorf("unknown --backend %q (want sluice or claude)", f.backend)
	}
	mode, err := protocol.ParsePermissionMode(f.permissionMode)
	if err != nil {
		return a, err
	}
	sel, err := openProvider(f.provider, f.model, os.Getenv)
	if err != nil {
		return a, err
	}
	var sessions sessionstore.Store = pg
	if pg == nil {
		root, err := sessionstore.DefaultRoot()
		if err != nil {
			return a, err
		}
		sessions = sessionstore.NewJSONL(root)
	}
	// The user's command hooks, as every face of sluice runs them.
	hks, err := hooks.ForProject(os.Getenv("HOME"), a.workDir, f.env, log)
	if err != nil {
		return a, err
	}
	a.options = func(dir string) agent.Options {
		return agent.Options{
			Provider: sel.Provider, Model: sel.Model, WorkDir: dir, PermissionMode: mode,
			Stream: sel.StreamOptions, Store: sessions, Logger: log, Hooks: hks, ChildEnv: f.env,
		}
	}
	return a, nil
}

// newBackend makes the agent backend. In cluster mode the sluice agent's
// sessions are the cluster's (sluiceagent.Cluster): run by the node holding
// each one's lease, restored by any node, listed and opened by
// `sluice serve` nodes.
func newBackend(f runFlags, a agentSetup, st *store.Store, log *slog.Logger) backend.Backend {
	switch {
	case f.backend == "claude":
		return claudecode.New(claudecode.Config{
			Command: f.claudeBin, WorkDir: a.workDir, PermissionMode: f.permissionMode, Model: f.model, KV: st, Logger: log,
		})
	case a.host != nil:
		return sluiceagent.New(sluiceagent.Config{
			KV: st, Logger: log,
			Cluster: &sluiceagent.Cluster{Host: a.host, Options: a.options, WorkDir: a.workDir},
		})
	}
	return sluiceagent.New(sluiceagent.Config{
		KV: st, Logger: log,
		Options: func(string) agent.Options { return a.options(a.workDir) },
	})
}

// openProvider picks the sluice backend's model provider as sluice itself
// does (provider.Open: flags, then SLUICE_PROVIDER, the keys, the base
// URLs, *_MODEL). Keys are read, never logged. The offline demo, which
// sluice falls back to without keys, is only used when asked for: a relay
// answering real people with canned text would be a silent failure.
func openProvider(name, modelName string, getenv func(string) string) (*provider.Selection, error) {
	sel, err := provider.Open(provider.Config{Provider: name, Model: modelName}, getenv)
	if err != nil {
		return nil, err
	}
	if sel.Notice != "" {
		return nil, errors.New("set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or a *_BASE_URL), --provider demo for the offline demo, or use --backend claude")
	}
	return sel, nil
}

// webhookChannel receives Telegram updates on an HTTP server instead of
// long polling; sending is the client's.
type webhookChannel struct {
	*telegram.Client
	secret, listen string
	log            *slog.Logger
}

// Receive serves the webhook until ctx is done. It returns at once with
// the cause when it cannot listen, or when the server fails.
func (w *webhookChannel) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	return w.ReceiveAccepting(ctx, func(ctx context.Context, in channel.Inbound) error {
		handle(ctx, in)
		return nil
	})
}

// ReceiveAccepting is Receive, answering 503 for an update accept refused.
func (w *webhookChannel) ReceiveAccepting(ctx context.Context, accept func(context.Context, channel.Inbound) error) error {
	ln, err := net.Listen("tcp", w.listen)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	err = serveWebhook(ctx, ln, telegram.WebhookHandler(w.secret, func(_ context.Context, in channel.Inbound) error {
		// The request ends before the agent does: hand over the relay's
		// context, not the request's.
		return accept(ctx, in)
	}))
	if err != nil {
		return err
	}
	return ctx.Err()
}

// serveWebhook serves h on ln until ctx is done (then it shuts the server
// down, giving the requests in flight 5 s) or the server fails.
func serveWebhook(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serving, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-serving.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	err := srv.Serve(ln)
	stop()
	<-stopped
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}
