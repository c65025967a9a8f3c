package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/cluster"
	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode"
	"github.com/sluicehq/sluice/internal/relay/backend/sluiceagent"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// Backends the relay runs the chats' agent with.
const (
	BackendSluice = "sluice" // sluice's own agent
	BackendClaude = "claude" // a Claude Code process per run
)

// Config is a relay's run, as 'sluice relay NAME' sets it.
type Config struct {
	Platform Platform
	// StateDir holds undelivered messages, cursors and sessions (and
	// the platform's credentials).
	StateDir string
	// BaseURL is the platform's API ("" its default).
	BaseURL string
	// Allow are the chat ids allowed to use the agent; AllowAll lets
	// every chat.
	Allow    []string
	AllowAll bool
	// Interrupt makes a new message abort the run in progress.
	Interrupt bool
	// Silence is how long without a message before "still working"
	// (0: never); TypingEvery how often the typing indicator is renewed.
	Silence, TypingEvery time.Duration
	Pacing               deliver.Pacing
	// WebhookURL receives by webhook at this public URL instead of long
	// polling, listening at WebhookListen (platforms with Webhook).
	WebhookURL, WebhookListen string
	// Cluster, when set, runs the relay as a node of a cluster: the
	// account's state in PostgreSQL, the channel held under a lease.
	Cluster *cli.ClusterFlags

	// Backend is BackendSluice or BackendClaude.
	Backend string
	// WorkDir is the agent's working directory ("" the current one).
	WorkDir string
	// ClaudeBin, Model and PermissionMode are the claude backend's.
	ClaudeBin, Model, PermissionMode string
	// Agent sets up the sluice backend's agent: the set-up every face of
	// sluice builds its agent with. It is called once the channel is open.
	Agent func(ctx context.Context) (agent.Options, error)

	Logger *slog.Logger
	// Stdout is where a login asked for on the way shows its QR code.
	Stdout io.Writer
}

// Run relays the platform's chats to the agent until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return err
	}
	log := cfg.Logger
	o := &opening{ctx: ctx, cfg: &cfg, log: log, stdout: cfg.Stdout, allow: cfg.Allow}
	var pg *pgstore.Store
	o.openStore = func(account string) error {
		var err error
		if cfg.Cluster == nil {
			o.st, err = store.Open(ctx, filepath.Join(cfg.StateDir, cfg.Platform.Name+".db"))
			return err
		}
		cf := cfg.Cluster
		cf.WarnCommandLine(log)
		natsOpts, err := cf.NATSOptions(os.Getenv, log)
		if err != nil {
			return fmt.Errorf("cluster: NATS: %w", err)
		}
		if o.nc, err = nats.Connect(cf.NATS, append(natsOpts, nats.Name("sluice relay "+cf.NodeID), nats.MaxReconnects(-1))...); err != nil {
			return fmt.Errorf("cluster: NATS: %w", err)
		}
		if pg, err = pgstore.Open(ctx, cf.Postgres); err != nil {
			// The DSN may hold a password: it is not repeated.
			return fmt.Errorf("cluster: PostgreSQL: %w", err)
		}
		if o.st, err = store.OpenPostgres(ctx, cf.Postgres, account); err != nil {
			return fmt.Errorf("cluster: PostgreSQL: %w", err)
		}
		ttl := cmp.Or(cf.LeaseTTL, cluster.DefaultLeaseTTL) // as the sessions'
		o.node = &Cluster{Leases: pg, Store: o.st, Key: "relay/" + account, Node: cf.NodeID, TTL: ttl, Logger: log}
		return nil
	}
	defer func() {
		if o.st != nil {
			o.st.Close()
		}
		if pg != nil {
			pg.Close()
		}
		if o.nc != nil {
			o.nc.Close()
		}
	}()
	// In cluster mode with a webhook, the node's webhook server: its
	// failure stops the node (stopServing's cause).
	o.stopServing = func(error) {}
	defer func() {
		o.stopServing(nil)
		if o.served != nil {
			<-o.served
		}
	}()
	ch, err := cfg.Platform.open(o)
	if err != nil {
		return err
	}
	ctx = o.ctx
	if len(o.allow) == 0 && !cfg.AllowAll {
		return errors.New("say which chats may use the agent with --allow ID[,ID] (a stranger's message is answered with its id), or --allow-all")
	}
	silence := cfg.Silence
	if silence == 0 {
		silence = -1
	}
	agentSet, err := setUpAgent(ctx, cfg, pg)
	if err != nil {
		return err
	}
	if o.node != nil && agentSet.options != nil {
		// The chats' sessions run on this process's cluster node, which
		// also takes over, while standing by, the sessions of a node
		// that died mid-run.
		if agentSet.host, err = cluster.Start(ctx, cluster.Config{
			NodeID: cfg.Cluster.NodeID, NATS: o.nc, Leases: cluster.PG(pg), LeaseTTL: o.node.TTL, Logger: log,
			Options: func(_ context.Context, dir string) (agent.Options, error) { return agentSet.options(dir), nil },
		}); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		defer agentSet.host.Close()
	}
	// term relays until ctx ends: the whole run of a single process, or
	// one holding of the channel's lease in cluster mode.
	term := func(ctx context.Context) error {
		be := newBackend(cfg, agentSet, o.st, log)
		defer be.Close()
		r, err := New(ctx, Options{
			Channel: ch, Backend: be, Store: o.st, Pacing: cfg.Pacing, Logger: log,
			Allow: o.allow, Silence: silence, TypingEvery: cfg.TypingEvery, Interrupt: cfg.Interrupt,
		})
		if err != nil {
			return err
		}
		log.Info("relay: running", "channel", cfg.Platform.Name, "backend", be.Name(), "allowed", o.allow)
		return r.Run(ctx)
	}
	if o.node == nil {
		return term(ctx)
	}
	log.Info("relay: cluster mode", "node", cfg.Cluster.NodeID, "lease", o.node.Key, "ttl", o.node.TTL)
	err = o.node.Hold(ctx, term)
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

// setUpAgent checks the backend and sets up the sluice agent's sessions:
// as cfg.Agent stores them, or in PostgreSQL (pg) in cluster mode.
func setUpAgent(ctx context.Context, cfg Config, pg *pgstore.Store) (agentSetup, error) {
	a := agentSetup{workDir: cfg.WorkDir}
	if a.workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return a, err
		}
		a.workDir = wd
	}
	switch cfg.Backend {
	case BackendClaude:
		return a, nil
	case BackendSluice:
	default:
		return a, fmt.Errorf("unknown --backend %q (want sluice or claude)", cfg.Backend)
	}
	opts, err := cfg.Agent(ctx)
	if err != nil {
		return a, err
	}
	a.workDir = opts.WorkDir
	if pg != nil {
		opts.Store = pg
	}
	a.options = func(dir string) agent.Options {
		o := opts
		o.WorkDir = dir
		return o
	}
	return a, nil
}

// newBackend makes the agent backend. In cluster mode the sluice agent's
// sessions are the cluster's (sluiceagent.Cluster): run by the node holding
// each one's lease, restored by any node, listed and opened by
// `sluice serve` nodes.
func newBackend(cfg Config, a agentSetup, st *store.Store, log *slog.Logger) backend.Backend {
	switch {
	case cfg.Backend == BackendClaude:
		return claudecode.New(claudecode.Config{
			Command: cfg.ClaudeBin, WorkDir: a.workDir, PermissionMode: cfg.PermissionMode, Model: cfg.Model, KV: st, Logger: log,
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
