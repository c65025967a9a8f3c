// Package cli holds what every face that runs an agent shares on the
// command line: the agent flags (provider, model, permissions, limits,
// stream watchdog), turning them and the environment into agent.Options,
// and opening a new, continued or resumed session.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/agentdefs"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/mcp"
	"github.com/sluicehq/sluice/internal/memory"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// Version is sluice's version, reported by faces.
const Version = "0.1.0"

// AgentFlags are the flags of an agent session.
type AgentFlags struct {
	Provider        string
	Model           string
	BaseURL         string
	PermissionMode  string
	SkipPermissions bool
	MaxTurns        int
	MaxTokens       int
	ThinkingBudget  int
	SystemPrompt    string
	// SettingSources, when set, limits the Claude Code settings read (hooks)
	// and the memory files to these sources (--setting-sources).
	SettingSources []hooks.Source
	AddDirs        stringList
	WorkDir        string
	StallWarning   time.Duration
	IdleTimeout    time.Duration
	DemoDelay      time.Duration
	ContextWindow  int
	AutoCompact    float64
	MCPConfigs     stringList
	ChildEnv       ChildEnvFlags

	// Set from Claude Code's flags (ClaudeFlags.ApplyTo), not flags of
	// their own.
	//
	// Betas go in Anthropic's anthropic-beta header (--betas).
	Betas []string
	// Effort is the requests' effort level (--effort).
	Effort string
	// AdaptiveThinking lets the model decide how much it thinks
	// (--thinking enabled/adaptive).
	AdaptiveThinking bool
	// FallbackModels take over when the model is unavailable
	// (--fallback-model).
	FallbackModels []string
	// MoreHooks run after the settings files' (--settings).
	MoreHooks hooks.Config
	// NoSettingsFiles reads no hooks from the settings files (--restricted).
	NoSettingsFiles bool

	fs *flag.FlagSet // to tell the flags given from the defaults
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Register adds the flags to fs.
func (f *AgentFlags) Register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.Provider, "provider", "", "model provider: "+strings.Join(provider.Names, ", ")+" (default: picked from the API keys in the environment; demo without any; OPENAI_WIRE_API=responses makes an OpenAI key use openai-responses)")
	fs.StringVar(&f.Model, "model", "", "model name (default: the provider's)")
	fs.StringVar(&f.BaseURL, "base-url", "", "API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL / GEMINI_BASE_URL, else the provider's)")
	fs.StringVar(&f.PermissionMode, "permission-mode", "", "default, acceptEdits, bypassPermissions or plan")
	fs.BoolVar(&f.SkipPermissions, "dangerously-skip-permissions", false, "run every tool without asking (bypassPermissions)")
	fs.IntVar(&f.MaxTurns, "max-turns", 0, "most model responses for one message (default 100)")
	fs.IntVar(&f.MaxTokens, "max-tokens", 0, "output token limit per response (default: the provider's)")
	fs.IntVar(&f.ThinkingBudget, "thinking-budget", 0, "extended thinking budget in tokens (0: off)")
	fs.StringVar(&f.SystemPrompt, "append-system-prompt", "", "text added to the system prompt")
	fs.Var(&f.AddDirs, "add-dir", "another directory the file tools may use (repeatable)")
	fs.StringVar(&f.WorkDir, "cwd", "", "working directory of the session (default: the current directory)")
	fs.DurationVar(&f.StallWarning, "stall-warning", 0, "silence from the model before a stalled notice (default 10s; env SLUICE_STREAM_STALL_WARNING)")
	fs.DurationVar(&f.IdleTimeout, "stream-idle-timeout", 0, "silence from the model before the attempt is retried (default 60s; env SLUICE_STREAM_IDLE_TIMEOUT)")
	fs.DurationVar(&f.DemoDelay, "demo-delay", 0, "pause between the demo provider's chunks (default: a realistic pace; negative: none)")
	fs.IntVar(&f.ContextWindow, "context-window", 0, "the model's context window in tokens (default 200000)")
	fs.Float64Var(&f.AutoCompact, "auto-compact", 0, "compact the session when the context passes this share of the window (default 0.85; negative: never)")
	fs.Var(&f.MCPConfigs, "mcp-config", "MCP servers from a JSON file or string in Claude Code's format (repeatable)")
	f.ChildEnv.Register(fs)
}

// Setup is a configured agent: its options, the provider chosen and the
// session store.
type Setup struct {
	Options   agent.Options
	Selection *provider.Selection
	Store     store.Store
	// MCP is set by StartMCP.
	MCP *mcp.Servers
	// Fork makes OpenSession continue a stored session in a copy under a
	// new id (--fork-session), leaving the original as it was.
	Fork bool
	// More are the servers StartMoreMCP started.
	More []*mcp.Servers
	// Hooks runs the settings files' command hooks (Options.Hooks); set
	// its Observe before the session opens to hear of each hook run.
	Hooks *hooks.Runner

	mcpConfig *mcp.Config
}

// Setup builds the agent options from the flags, the settings file
// (ConfigPath) and the environment.
func (f *AgentFlags) Setup(getenv func(string) string, logger *slog.Logger) (*Setup, error) {
	conf, err := LoadConfig(ConfigPath(getenv))
	if err != nil {
		return nil, err
	}
	f.applyConfig(conf, setFlags(f.fs))
	childEnv, err := f.ChildEnv.Policy(conf)
	if err != nil {
		return nil, err
	}
	mode := f.PermissionMode
	if f.SkipPermissions {
		if mode != "" && mode != string(protocol.ModeBypassPermissions) {
			return nil, fmt.Errorf("--dangerously-skip-permissions conflicts with --permission-mode %s", mode)
		}
		mode = string(protocol.ModeBypassPermissions)
	}
	pm, err := protocol.ParsePermissionMode(mode)
	if err != nil {
		return nil, err
	}
	if f.MaxTurns < 0 || f.MaxTokens < 0 || f.ThinkingBudget < 0 {
		return nil, errors.New("--max-turns, --max-tokens and --thinking-budget must not be negative")
	}
	sel, err := provider.Open(provider.Config{
		Provider: f.Provider, Model: f.Model, BaseURL: f.BaseURL,
		Demo: demoConfig(f.DemoDelay), Betas: f.Betas,
	}, getenv)
	if err != nil {
		return nil, err
	}
	// Settings file < environment < flags.
	so, err := model.StreamOptionsFromEnv(model.StreamOptions{
		StallWarning: time.Duration(conf.StallWarning), IdleTimeout: time.Duration(conf.StreamIdleTimeout),
	}, getenv)
	if err != nil {
		return nil, err
	}
	if f.StallWarning != 0 {
		so.StallWarning = f.StallWarning
	}
	if f.IdleTimeout != 0 {
		so.IdleTimeout = f.IdleTimeout
	}
	for _, m := range f.FallbackModels {
		if m != sel.Model && !slices.Contains(so.FallbackModels, m) {
			so.FallbackModels = append(so.FallbackModels, m)
		}
	}
	root, err := store.DefaultRoot()
	if err != nil {
		return nil, err
	}
	wd := f.WorkDir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sources := hooks.AllSources
	if f.SettingSources != nil {
		sources = f.SettingSources
	}
	var mem []agent.MemoryFile
	if conf.ProjectMemory == nil || *conf.ProjectMemory {
		from := memory.Sources{
			User:    slices.Contains(sources, hooks.SourceUser),
			Project: slices.Contains(sources, hooks.SourceProject),
			Local:   slices.Contains(sources, hooks.SourceLocal),
		}
		if mem, err = memory.Load(wd, getenv("HOME"), from); err != nil {
			return nil, err
		}
	}
	// Claude Code's hooks, from the files Claude Code reads them from.
	hookSources := sources
	if f.NoSettingsFiles {
		hookSources = nil
	}
	hookRunner, err := hooks.NewRunner(getenv("HOME"), wd, hookSources, f.MoreHooks, childEnv, logger)
	if err != nil {
		return nil, err
	}
	// Claude Code's subagent definitions, from the same places.
	subagents, err := agentdefs.Load(getenv("HOME"), wd, agentdefs.Sources{
		User:    slices.Contains(sources, hooks.SourceUser),
		Project: slices.Contains(sources, hooks.SourceProject),
	})
	if err != nil {
		return nil, err
	}
	if subagents == nil {
		subagents = []agent.Subagent{} // the general-purpose kind alone
	}
	var mcpConfig *mcp.Config
	if len(f.MCPConfigs) > 0 {
		if mcpConfig, err = mcp.LoadConfig(f.MCPConfigs...); err != nil {
			return nil, err
		}
	}
	st := store.NewJSONL(root)
	return &Setup{
		mcpConfig: mcpConfig,
		Hooks:     hookRunner,
		Selection: sel,
		Store:     st,
		Options: agent.Options{
			Provider:         sel.Provider,
			Model:            sel.Model,
			SystemPrompt:     f.SystemPrompt,
			Memory:           mem,
			WorkDir:          wd,
			AllowedDirs:      f.AddDirs,
			PermissionMode:   pm,
			MaxTurns:         f.MaxTurns,
			MaxTokens:        f.MaxTokens,
			ThinkingBudget:   f.ThinkingBudget,
			AdaptiveThinking: f.AdaptiveThinking,
			Effort:           f.Effort,
			ContextWindow:    f.ContextWindow,
			AutoCompact:      f.AutoCompact,
			Stream:           so,
			Catalogue:        provider.Catalogue,
			Store:            st,
			ChildEnv:         childEnv,
			Hooks:            hookRunner.Agent(),
			Subagents:        subagents,
			Logger:           logger,
		},
	}, nil
}

func demoConfig(delay time.Duration) demo.Config { return demo.Config{Delay: delay} }

// StartMCP starts the MCP servers of --mcp-config and adds their tools to
// the options. Servers that fail are reported in the error; the others
// still serve, so callers usually warn and go on. Close stops them.
func (s *Setup) StartMCP(ctx context.Context) error {
	if s.mcpConfig == nil || s.MCP != nil {
		return nil
	}
	servers, err := mcp.Connect(ctx, s.mcpConfig, &mcp.Options{Dir: s.Options.WorkDir, Version: Version, ChildEnv: s.Options.ChildEnv})
	s.MCP = servers
	s.Options.ExtraTools = append(s.Options.ExtraTools, servers.Tools()...)
	return err
}

// SDKMCPServers are the servers of --mcp-config whose type is sdk: the
// program driving print mode serves them (Connect leaves them out).
func (s *Setup) SDKMCPServers() []string { return s.mcpConfig.SDKServers() }

// StartMoreMCP starts the MCP servers of more configurations (files or
// JSON in Claude Code's format, as a host's initialize gives them) and adds
// their tools to the options. Close stops them.
func (s *Setup) StartMoreMCP(ctx context.Context, configs ...string) error {
	cfg, err := mcp.LoadConfig(configs...)
	if err != nil {
		return err
	}
	servers, err := mcp.Connect(ctx, cfg, &mcp.Options{Dir: s.Options.WorkDir, Version: Version})
	if servers != nil {
		s.More = append(s.More, servers)
		s.Options.ExtraTools = append(s.Options.ExtraTools, servers.Tools()...)
	}
	return err
}

// MCPStatus is the state of every MCP server started.
func (s *Setup) MCPStatus() []mcp.Status {
	var out []mcp.Status
	for _, srv := range append([]*mcp.Servers{s.MCP}, s.More...) {
		if srv != nil {
			out = append(out, srv.Status()...)
		}
	}
	return out
}

// Close stops what Setup started (the MCP servers).
func (s *Setup) Close() error {
	var errs []error
	for _, srv := range append([]*mcp.Servers{s.MCP}, s.More...) {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}

// OpenSession starts a new session, or continues the most recent one of
// the working directory (cont), or resumes session resume.
func (s *Setup) OpenSession(cont bool, resume string) (*agent.Session, error) {
	open := agent.Open
	if s.Fork {
		open = agent.Fork
	}
	switch {
	case resume != "":
		return open(s.Options, resume)
	case cont:
		list, err := agent.ListSessions(context.Background(), s.Store, s.Options.WorkDir)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("no session to continue in %s", s.Options.WorkDir)
		}
		return open(s.Options, list[0].ID)
	}
	return agent.New(s.Options)
}

// ParseInterspersed parses fs over args allowing flags after positional
// arguments (sluice -p "prompt" --output-format json), as people type them.
// A "--" ends the flags.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
