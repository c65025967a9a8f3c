package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/relay"
)

func init() {
	register("relay", "chat relay: talk to the agent from WeChat or Telegram", relayMain)
}

// relayUsage lists the relay's commands, a platform's from its entry in
// relay.Platforms.
func relayUsage() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, p := range relay.Platforms {
		b.WriteString(p.Usage + "\n")
	}
	fmt.Fprintf(&b, `  sluice relay simulate --channel %s FILE
                                       print the messages a recorded run
                                       (stream-json) would be delivered as
Run 'sluice relay <command> -h' for the flags.`, platformNames())
	return b.String()
}

// platformNames are the platforms' names as usage lines give them: a|b.
func platformNames() string {
	var names []string
	for _, p := range relay.Platforms {
		names = append(names, p.Name)
	}
	return strings.Join(names, "|")
}

// relayMain is 'sluice relay': a platform's relay, its login, or simulate.
func relayMain(ctx context.Context, args []string, stdio Stdio) int {
	if len(args) == 0 {
		fmt.Fprintln(stdio.Err, relayUsage())
		return 2
	}
	switch args[0] {
	case "simulate":
		return relaySimulate(args[1:], stdio)
	case "-h", "--help", "help":
		fmt.Fprintln(stdio.Out, relayUsage())
		return 0
	}
	p, ok := relay.FindPlatform(args[0])
	if !ok {
		fmt.Fprintf(stdio.Err, "sluice relay: unknown command %q\n%s\n", args[0], relayUsage())
		return 2
	}
	if len(args) > 1 && args[1] == "login" && p.Login != nil {
		return relayLogin(ctx, p, args[2:], stdio)
	}
	return relayRun(ctx, p, args[1:], stdio)
}

func relaySimulate(args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice relay simulate", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var names []string
	for _, p := range relay.Platforms {
		names = append(names, fmt.Sprintf("%s (%d)", p.Name, p.Limit))
	}
	ch := fs.String("channel", relay.Platforms[0].Name, "channel whose limit applies: "+strings.Join(names, ", "))
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p, ok := relay.FindPlatform(*ch)
	if !ok || fs.NArg() != 1 {
		fmt.Fprintf(stdio.Err, "usage: sluice relay simulate --channel %s FILE\n", platformNames())
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice relay simulate:", err)
		return 1
	}
	defer f.Close()
	ps, err := relay.Simulate(f, p.Limit)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice relay simulate:", err)
		return 1
	}
	if err := relay.WritePreviews(stdio.Out, ps); err != nil {
		fmt.Fprintln(stdio.Err, "sluice relay simulate:", err)
		return 1
	}
	return 0
}

func relayLogin(ctx context.Context, p relay.Platform, args []string, stdio Stdio) int {
	name := "sluice relay " + p.Name + " login"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	stateDir := fs.String("state-dir", relay.DefaultStateDir(), "where the relay keeps its state and the credentials")
	baseURL := fs.String("base-url", p.DefaultBaseURL, "the platform's bot API base URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := p.Login(ctx, *stateDir, *baseURL, stdio.Out); err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// relayRun is 'sluice relay NAME': the platform's chats relayed to the
// agent. The sluice backend's agent takes the flags every face takes
// (cli.AgentFlags: provider, model, permissions, --mcp-config, child
// environment) and is built by the same set-up (settings file, memory
// files, subagents, hooks).
func relayRun(ctx context.Context, p relay.Platform, args []string, stdio Stdio) int {
	name := "sluice relay " + p.Name
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	pacing := p.Pacing()
	cfg := relay.Config{Platform: p, Stdout: stdio.Out}
	var (
		af           cli.AgentFlags
		cf           cli.ClusterFlags
		allow        string
		verbose      bool
		dailyBudget  int
		breakerFails int
	)
	fs.StringVar(&cfg.StateDir, "state-dir", relay.DefaultStateDir(), "where the relay keeps undelivered messages, cursors and sessions")
	// The relay's --base-url is the platform's; the model's comes from
	// the environment (ANTHROPIC_BASE_URL, ...).
	fs.StringVar(&cfg.BaseURL, "base-url", "", "the platform's API base URL (default "+p.DefaultBaseURL+")")
	fs.StringVar(&cfg.Backend, "backend", relay.BackendSluice, "agent backend: sluice (the built-in agent) or claude (Claude Code)")
	fs.StringVar(&cfg.ClaudeBin, "claude-bin", "claude", "the Claude Code executable (backend claude)")
	fs.StringVar(&af.WorkDir, "workdir", "", "the agent's working directory (default: the current one; same as --cwd)")
	fs.StringVar(&allow, "allow", "", "comma-separated chat ids allowed to use the agent")
	fs.BoolVar(&cfg.AllowAll, "allow-all", false, "let every chat use the agent (it runs tools on this machine!)")
	fs.BoolVar(&cfg.Interrupt, "interrupt", false, "a new message aborts the run in progress instead of waiting")
	fs.DurationVar(&cfg.Silence, "silence", 5*time.Minute, "say \"still working\" after this long without a message (0: never)")
	fs.DurationVar(&cfg.TypingEvery, "typing-every", 5*time.Second, "refresh the typing indicator this often")
	fs.DurationVar(&pacing.MinInterval, "min-interval", pacing.MinInterval, "least time between two messages of the bot")
	fs.DurationVar(&pacing.ChatInterval, "chat-interval", pacing.ChatInterval, "least time between two messages to one chat")
	fs.DurationVar(&pacing.Cooldown, "cooldown", pacing.Cooldown, "pause after the platform's throttling error")
	fs.IntVar(&breakerFails, "breaker-failures", pacing.BreakerFailures, "failures in a row that open the circuit (0: no breaker)")
	fs.DurationVar(&pacing.BreakerOpen, "breaker-open", pacing.BreakerOpen, "how long an open circuit stops sending")
	fs.DurationVar(&pacing.SendTimeout, "send-timeout", pacing.SendTimeout, "give up on a send the platform does not answer within this (it is tried again)")
	fs.IntVar(&dailyBudget, "daily-budget", 0, "most messages sent per day (0: no cap)")
	fs.BoolVar(&verbose, "v", false, "log debugging detail")
	if p.Webhook {
		fs.StringVar(&cfg.WebhookURL, "webhook-url", "", "receive by webhook at this public HTTPS URL instead of long polling (secret: TELEGRAM_WEBHOOK_SECRET)")
		fs.StringVar(&cfg.WebhookListen, "webhook-listen", "127.0.0.1:8443", "address the webhook server listens on")
	}
	cf.Register(fs)
	af.Register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stdio.Err, "%s: unexpected arguments %q\n", name, fs.Args())
		return 2
	}
	clustered, err := cf.Resolve(os.Getenv)
	if err == nil {
		// A bad child-environment policy is a bad command line, whichever
		// the backend.
		err = af.CheckChildEnv(os.Getenv)
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", name, err)
		return 2
	}
	if clustered {
		cfg.Cluster = &cf
	}
	for _, a := range strings.Split(allow, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Allow = append(cfg.Allow, a)
		}
	}
	pacing.BreakerFailures, pacing.DailyBudget = breakerFails, dailyBudget
	cfg.Pacing = pacing
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
	cfg.Logger = log
	cfg.WorkDir, cfg.Model = af.WorkDir, af.Model
	cfg.PermissionMode = cmp.Or(af.PermissionMode, "default")
	var setup *cli.Setup
	cfg.Agent = func(ctx context.Context) (agent.Options, error) {
		s, err := relayAgent(ctx, &af, os.Getenv, log)
		if err != nil {
			return agent.Options{}, err
		}
		setup = s
		return s.Options, nil
	}
	err = relay.Run(ctx, cfg)
	if setup != nil {
		setup.Close()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdio.Err, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// relayAgent sets up the sluice backend's agent as every face's is set
// up, and starts its MCP servers. The offline demo, which sluice falls
// back to without keys, is only used when asked for: a relay answering
// real people with canned text would be a silent failure.
func relayAgent(ctx context.Context, af *cli.AgentFlags, getenv func(string) string, log *slog.Logger) (*cli.Setup, error) {
	setup, err := af.Setup(getenv, log)
	if err != nil {
		return nil, err
	}
	if setup.Selection.Notice != "" {
		setup.Close()
		return nil, errors.New("set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or a *_BASE_URL), --provider demo for the offline demo, or use --backend claude")
	}
	if err := setup.StartMCP(ctx); err != nil {
		log.Warn("MCP servers", "err", err)
	}
	return setup, nil
}
