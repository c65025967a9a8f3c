package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/agentdefs"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// ClaudeSetup is the agent of sluice's own command (the terminal UI and
// print mode): Setup as AgentFlags make it, shaped by Claude Code's flags.
type ClaudeSetup struct {
	*Setup
	// Rules are --allowedTools' and --disallowedTools' (with --settings'),
	// the demo's harmless command allowed.
	Rules *Rules
	// HostMode is the permission mode as given: Claude Code's dontAsk and
	// auto run as default, and print mode reports them as given.
	HostMode string
	// BaseSystem is --system-prompt (or its file), "" for sluice's own.
	BaseSystem string
	// JSONSchema is --json-schema, checked to be JSON.
	JSONSchema json.RawMessage

	debugFile *os.File
}

// Close stops what the set-up started and closes --debug-file.
func (s *ClaudeSetup) Close() error {
	err := s.Setup.Close()
	if s.debugFile != nil {
		err = errors.Join(err, s.debugFile.Close())
	}
	return err
}

// Setup applies Claude Code's flags and af, the settings file and the
// environment, in the one place every run of sluice's own command takes
// its agent from; it starts the MCP servers of --mcp-config. Notes on
// flags accepted and not honoured, and warnings that do not stop the run,
// go to stderr; an error is a bad command line (exit code 2).
func (c *ClaudeFlags) Setup(ctx context.Context, af *AgentFlags, getenv func(string) string, stderr io.Writer) (*ClaudeSetup, error) {
	if c.Continue && c.Resume != "" {
		return nil, errors.New("--continue and --resume exclude each other")
	}
	for _, n := range c.Notes() {
		fmt.Fprintln(stderr, n)
	}
	if err := c.ApplyTo(af); err != nil {
		return nil, err
	}
	if n := c.SettingsNote(); n != "" {
		fmt.Fprintln(stderr, n)
	}
	if c.ResumeSessionAt != "" && c.Resume == "" && !c.Continue {
		return nil, errors.New("--resume-session-at needs --resume or --continue")
	}
	baseSystem, err := c.ReplacementSystemPrompt()
	if err != nil {
		return nil, err
	}
	flagAgents, err := agentdefs.ParseJSON(c.Agents)
	if err != nil {
		return nil, err
	}
	cs := &ClaudeSetup{HostMode: af.PermissionMode, BaseSystem: baseSystem}
	if cs.HostMode == "dontAsk" || cs.HostMode == "auto" {
		af.PermissionMode = "default"
	}
	level := slog.LevelWarn
	if c.Verbose {
		level = slog.LevelInfo
	}
	logOut := stderr
	if c.Debug.On || c.DebugFile != "" || c.MCPDebug.On {
		level = slog.LevelDebug
	}
	if c.DebugFile != "" {
		// Claude Code's --debug-file: the diagnostics go to the file, not stderr.
		f, err := os.OpenFile(c.DebugFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--debug-file: %w", err)
		}
		cs.debugFile, logOut = f, f
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	if cs.Setup, err = af.Setup(getenv, logger); err != nil {
		cs.closeDebugFile()
		return nil, err
	}
	if err := c.shape(cs, af, flagAgents, stderr); err != nil {
		cs.Close()
		return nil, err
	}
	if n := cs.Selection.Notice; n != "" {
		fmt.Fprintln(stderr, n)
	}
	if err := cs.StartMCP(ctx); err != nil {
		fmt.Fprintln(stderr, "sluice: warning:", err)
	}
	return cs, nil
}

func (s *ClaudeSetup) closeDebugFile() {
	if s.debugFile != nil {
		s.debugFile.Close()
	}
}

// shape applies the flags that shape the session's options: persistence,
// id and name, subagents, --restricted, --tools, --agent, the rules and
// --json-schema.
func (c *ClaudeFlags) shape(cs *ClaudeSetup, af *AgentFlags, flagAgents []agent.Subagent, stderr io.Writer) error {
	setup := cs.Setup
	setup.Options.BaseSystemPrompt = cs.BaseSystem
	setup.Fork = c.ForkSession
	if c.NoSessionPersistence {
		setup.Options.Store = nil
	}
	setup.Options.SessionID = c.SessionID
	setup.Options.Title = c.Name
	if c.Name != "" && (c.Resume != "" || c.Continue) {
		fmt.Fprintln(stderr, "sluice: --name names new sessions; the resumed session keeps its name")
	}
	if len(af.Betas) > 0 && setup.Selection.Name != provider.Anthropic {
		fmt.Fprintf(stderr, "sluice: --betas: sent to Anthropic's API only, not to %s\n", setup.Selection.Name)
	}
	setup.Options.Subagents = agentdefs.Merge(setup.Options.Subagents, flagAgents)
	if c.Restricted {
		if setup.Options.PermissionMode == protocol.ModeBypassPermissions {
			return errors.New("bypassPermissions is not supported in restricted mode")
		}
		if !c.Tools.Given {
			setup.Options.Tools = RestrictedTools(setup.Options.WorkDir)
		}
		fmt.Fprintln(stderr, "sluice: --restricted: writes to settings, git and tool configuration files are decided as any other write (by the mode, rules and host)")
	}
	if c.Tools.Given {
		ts, unknown := SelectTools(setup.Options.WorkDir, c.Tools.Value)
		withAgent := false
		for _, n := range unknown {
			if n == "Agent" || n == "Task" {
				withAgent = true
				continue
			}
			fmt.Fprintf(stderr, "sluice: --tools: no built-in tool %q; left out\n", n)
		}
		setup.Options.Tools = ts
		if !withAgent && strings.TrimSpace(c.Tools.Value) != "default" {
			setup.Options.Subagents = nil
		}
	}
	if c.Agent != "" {
		if err := runAs(&setup.Options, c.Agent, cs.BaseSystem != ""); err != nil {
			return err
		}
	}
	rules, err := ParseRules(c.AllowedTools, c.DisallowedTools, setup.Options.WorkDir)
	if err != nil {
		return err
	}
	if setup.Selection.Name == provider.Demo {
		// The demo model's one tool call is its scripted, harmless loop.
		// Print mode cannot ask anyone; denying it would tell the user
		// they refused something they were never asked. (The terminal UI
		// asks, which shows a permission prompt.)
		rules.ExactBash = append(rules.ExactBash, demo.BashCommand)
	}
	cs.Rules = rules
	if c.JSONSchema != "" {
		if cs.JSONSchema = json.RawMessage(c.JSONSchema); !json.Valid(cs.JSONSchema) {
			return errors.New("--json-schema: not a JSON schema")
		}
	}
	return nil
}

// runAs makes the session the subagent named name (--agent): its prompt
// (unless --system-prompt gave one), its tools and its model.
func runAs(opts *agent.Options, name string, promptGiven bool) error {
	d, ok := agentdefs.Find(opts.Subagents, name)
	if !ok {
		return fmt.Errorf("--agent: no agent %q (define it in .claude/agents/ or with --agents)", name)
	}
	if d.Prompt != "" && !promptGiven {
		opts.BaseSystemPrompt = d.Prompt
	}
	if d.Tools != nil {
		ts, _ := SelectTools(opts.WorkDir, strings.Join(d.Tools, ","))
		opts.Tools = ts
		if !slices.Contains(d.Tools, "Agent") && !slices.Contains(d.Tools, "Task") {
			opts.Subagents = nil
		}
	}
	if d.Model != "" && d.Model != "inherit" {
		opts.Model = agent.ResolveModel(d.Model, opts.Model)
	}
	return nil
}

// HideFrom leaves out of o the tools a deny rule names as a whole, as
// Claude Code does not offer them to the model (a rule with a pattern,
// Bash(rm:*), leaves the tool offered and denies matching calls).
func (r *Rules) HideFrom(o *agent.Options) {
	hidden := func(t tool.Tool) bool { return r.Hides(t.Name()) }
	if o.Tools == nil {
		o.Tools = tools.BuiltinsIn(o.WorkDir)
	}
	o.Tools = slices.DeleteFunc(slices.Clone(o.Tools), hidden)
	o.ExtraTools = slices.DeleteFunc(slices.Clone(o.ExtraTools), hidden)
	if r.Hides("Agent") {
		o.Subagents = nil
	}
}
