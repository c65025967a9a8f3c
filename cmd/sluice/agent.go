package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/agentdefs"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/gctune"
	"github.com/sluicehq/sluice/internal/printmode"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/internal/tui"
	"github.com/sluicehq/sluice/protocol"
)

func init() {
	register("", "the agent: interactive, or print mode with -p", agentMain)
}

// agentMain is sluice without a subcommand: the terminal UI, or with -p
// the headless print mode.
func agentMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var (
		af cli.AgentFlags
		cf cli.ClaudeFlags
	)
	af.Register(fs)
	cf.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stdio.Err, "Usage: sluice [flags] [prompt]   (sluice help: the commands and faces)")
		cli.AgentFlagsHelp(stdio.Err, fs)
	}
	pos, err := cli.ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if cf.Version {
		fmt.Fprintln(stdio.Out, "sluice", cli.Version)
		return 0
	}
	if !cf.WantsPrint(isTerminalWriter(stdio.Out)) {
		if restore := holdTypeahead(stdio.In); restore != nil {
			defer restore()
		}
	}
	setup, err := cf.Setup(ctx, &af, os.Getenv, stdio.Err)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 2
	}
	defer setup.Close()
	rules := setup.Rules
	prompt := strings.Join(pos, " ")

	if !cf.WantsPrint(isTerminalWriter(stdio.Out)) {
		return runTUI(ctx, setup.Setup, prompt, cf.Continue, cf.Resume, stdio)
	}
	cfg := printmode.Config{
		OutputFormat: cf.OutputFormat, InputFormat: cf.InputFormat, IncludePartial: cf.Partial,
		Model: setup.Selection.Model, PermissionMode: cmp.Or(setup.HostMode, string(setup.Options.PermissionMode)),
		APIKeySource: setup.Selection.APIKeySource(os.Getenv), Version: cli.Version,
		AddDirs: af.AddDirs, MaxRetries: setup.Options.Stream.MaxRetries,
		PermissionPromptStdio: cf.PermissionPromptTool == "stdio", ReplayUserMessages: cf.ReplayUserMessages,
		Rules: rules.Decide, JSONSchema: setup.JSONSchema, MaxBudgetUSD: cf.MaxBudgetUSD,
		Models: provider.Models(setup.Selection.Name), ContextWindow: setup.Options.ContextWindow,
		Catalogue:       setup.Options.Catalogue,
		AwaitInitialize: cf.AwaitInitialize, IncludeHookEvents: cf.IncludeHookEvents, Restricted: cf.Restricted,
		Effort: af.Effort, Betas: af.Betas, SessionState: sessionStateFromEnv(os.Getenv),
		Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err,
	}
	if cf.OutputFormat == printmode.FormatStreamJSON {
		cfg.HookEvents = &printmode.HookRelay{}
		setup.Hooks.Observe = cfg.HookEvents.Observe
	}
	if t := cf.PermissionPromptTool; t != "" && t != "stdio" {
		fmt.Fprintf(stdio.Err, "sluice: --permission-prompt-tool %s: only stdio is supported; calls that need approval are denied\n", t)
	}
	cfg.SDKMCPServers = setup.SDKMCPServers()
	cfg.MCPStatus = func() []streamjson.MCPServer {
		var out []streamjson.MCPServer
		for _, st := range setup.MCPStatus() {
			// sluice's servers come from --mcp-config or initialize.
			out = append(out, streamjson.MCPServer{Name: st.Name, Status: st.State, Source: streamjson.SourceDynamic})
		}
		return out
	}
	if v := os.Getenv("SLUICE_BACKGROUND_WAIT"); v != "" {
		if cfg.BackgroundWait, err = time.ParseDuration(v); err != nil {
			fmt.Fprintln(stdio.Err, "sluice: SLUICE_BACKGROUND_WAIT:", err)
			return 2
		}
		if cfg.BackgroundWait == 0 {
			cfg.BackgroundWait = -1 // "0s": do not wait
		}
	}
	if err := cfg.ValidateFormats(); err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 2
	}
	if cf.InputFormat != printmode.FormatStreamJSON {
		prompt, err = joinStdinPrompt(prompt, stdio.In)
		if err != nil {
			fmt.Fprintln(stdio.Err, "sluice:", err)
			return 2
		}
		if prompt == "" {
			fmt.Fprintln(stdio.Err, `sluice: no prompt: give one as an argument (sluice -p "...") or on stdin`)
			return 2
		}
		// A one-prompt run is short and its live heap small (~1–2 MB): at
		// the default the runtime's 4 MB minimum goal, filled with the
		// deltas' garbage, set its peak RSS above start-up's. At 50 the
		// minimum is 2 MB: BenchmarkHeadlessStream's peak 19.2–19.6 →
		// 18.4–18.6 MB for ~7 ms more CPU of ~70.
		gctune.Percent(os.Getenv, 50)
	}
	// Nobody is there to answer a permission prompt: what the mode does
	// not allow is denied, and the result lists the denials.
	setup.Options.Approve = func(context.Context, protocol.PermissionRequest) protocol.Decision { return protocol.DecisionDeny }
	var sess *agent.Session
	cfg.Open = func(init printmode.Init) (*agent.Session, error) {
		// The settings' hooks first: applyInit joins the host's to them.
		if err := applyInitRules(setup.Setup, init, rules, &cf, stdio.Err); err != nil {
			return nil, err
		}
		applyInit(ctx, setup.Setup, init, stdio.Err)
		rules.HideFrom(&setup.Options)
		s, err := setup.OpenSession(cf.Continue, cf.Resume)
		sess = s
		if err == nil && cf.ResumeSessionAt != "" {
			err = printmode.ResumeAt(ctx, s, cf.ResumeSessionAt)
		}
		return s, err
	}
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	return printmode.Run(ctx, nil, prompt, cfg)
}

// sessionStateFromEnv is who hears of session state changes, as the
// environment asks Claude Code: the SDK sets
// CLAUDE_CODE_SDK_READS_SESSION_STATE for itself;
// CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS asks for them for every reader.
func sessionStateFromEnv(getenv func(string) string) string {
	switch {
	case envOn(getenv("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS")):
		return printmode.SessionStateAll
	case envOn(getenv("CLAUDE_CODE_SDK_READS_SESSION_STATE")):
		return printmode.SessionStateHost
	}
	return ""
}

func envOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// sdkIdentity starts the system prompt a host gives in initialize, as
// Claude Code starts it.
const sdkIdentity = "You are sluice, an agent that a program drives through the Claude Agent SDK's protocol."

// applyInit shapes the session's options as the host's initialize asks.
// applyInitRules takes the settings and disallowed tools the SDK delivers
// in initialize (--initialize-fields) as --settings and --disallowedTools
// take them. It runs before the session opens, so the rules and hooks it
// adds are in place for the first call.
func applyInitRules(setup *cli.Setup, init printmode.Init, rules *cli.Rules, cf *cli.ClaudeFlags, stderr io.Writer) error {
	if err := rules.Add(nil, init.DisallowedTools); err != nil {
		return fmt.Errorf("initialize's disallowedTools: %w", err)
	}
	if init.Settings == nil {
		return nil
	}
	st, err := cli.SettingsValue(init.Settings)
	if err != nil {
		return fmt.Errorf("initialize's %w", err)
	}
	if err := rules.Add(st.Allow, st.Deny); err != nil {
		return fmt.Errorf("initialize's settings: %w", err)
	}
	for ev, ms := range st.Hooks {
		setup.Hooks.Config[ev] = append(setup.Hooks.Config[ev], ms...)
	}
	setup.Options.Hooks = setup.Hooks.Agent()
	setup.Options.AllowedDirs = append(setup.Options.AllowedDirs, st.AddDirs...)
	if st.Model != "" && !cf.Given("model") {
		setup.Options.Model = st.Model
	}
	if st.DefaultMode != "" && !cf.Given("permission-mode") && !cf.Given("dangerously-skip-permissions") {
		if m, err := protocol.ParsePermissionMode(st.DefaultMode); err == nil {
			setup.Options.PermissionMode = m
		}
	}
	if len(st.Ignored) > 0 {
		fmt.Fprintf(stderr, "sluice: initialize's settings: %s accepted for Claude Code compatibility and ignored (sluice takes hooks, permissions and model)\n", strings.Join(st.Ignored, ", "))
	}
	return nil
}

func applyInit(ctx context.Context, setup *cli.Setup, init printmode.Init, stderr io.Writer) {
	opts := &setup.Options
	if init.SystemPrompt != nil {
		opts.BaseSystemPrompt = strings.TrimSpace(sdkIdentity + "\n\n" + *init.SystemPrompt)
	}
	if init.Title != "" {
		opts.Title = init.Title
	}
	if init.AppendSystemPrompt != "" {
		opts.SystemPrompt = strings.TrimSpace(opts.SystemPrompt + "\n\n" + init.AppendSystemPrompt)
	}
	if init.MCPServers != nil {
		if err := setup.StartMoreMCP(ctx, string(init.MCPServers)); err != nil {
			fmt.Fprintln(stderr, "sluice: warning:", err)
		}
	}
	opts.ExtraTools = append(opts.ExtraTools, init.Tools...)
	if len(init.Subagents) > 0 {
		opts.Subagents = agentdefs.Merge(opts.Subagents, init.Subagents)
	}
	// The user's command hooks (settings files) and the host's run side
	// by side.
	opts.Hooks = agent.JoinHooks(opts.Hooks, init.Hooks)
}

func runTUI(ctx context.Context, setup *cli.Setup, prompt string, cont bool, resume string, stdio Stdio) int {
	if f, ok := stdio.Out.(*os.File); !ok || !isTerminal(f) {
		fmt.Fprintln(stdio.Err, `sluice: the interactive agent needs a terminal; for scripts use print mode: sluice -p "prompt"`)
		return 2
	}
	sess, err := setup.OpenSession(cont, resume)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 1
	}
	opts := setup.Options
	err = tui.Run(ctx, tui.Options{
		Session: sess,
		Open:    func(id string) (*agent.Session, error) { return agent.Open(opts, id) },
		List:    func() ([]agent.SessionInfo, error) { return agent.ListSessions(ctx, setup.Store, opts.WorkDir) },
		Models:  provider.Models(setup.Selection.Name),
		Prompt:  prompt,
		Input:   stdio.In,
		Output:  stdio.Out,
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 1
	}
	return 0
}

// maxStdinPrompt bounds a prompt read from stdin; a longer one is an
// error, never cut.
const maxStdinPrompt = 64 << 20

// stdinWait is how long a prompt argument waits for piped stdin to start,
// as Claude Code waits: a pipe that nobody writes to (an inherited one)
// must not hang a run whose prompt is on the command line.
const stdinWait = 3 * time.Second

// joinStdinPrompt joins the prompt argument and what is piped on stdin as
// Claude Code joins them: the argument, a newline, then stdin's text. A
// lone "-" argument only says "read stdin" (claude -p -). Stdin that is a
// terminal is not read.
func joinStdinPrompt(arg string, in io.Reader) (string, error) {
	if arg == "-" {
		arg = ""
	}
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		return strings.TrimSpace(arg), nil
	}
	data, err := readStdin(in, arg != "")
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(string(data))
	switch {
	case arg == "":
		return text, nil
	case text == "":
		return arg, nil
	}
	return arg + "\n" + text, nil
}

// readStdin reads all of in, up to maxStdinPrompt. With mayGiveUp, no byte
// within stdinWait means no input.
func readStdin(in io.Reader, mayGiveUp bool) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	first := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		r := io.LimitReader(in, maxStdinPrompt+1)
		p := make([]byte, 32<<10)
		once := false
		for {
			n, err := r.Read(p)
			buf.Write(p[:n])
			if n > 0 && !once {
				once = true
				close(first)
			}
			if err == io.EOF {
				done <- result{buf.Bytes(), nil}
				return
			}
			if err != nil {
				done <- result{nil, err}
				return
			}
		}
	}()
	if mayGiveUp {
		t := time.NewTimer(stdinWait)
		defer t.Stop()
		select {
		case <-first:
		case r := <-done:
			return checkStdin(r.data, r.err)
		case <-t.C:
			return nil, nil
		}
	}
	r := <-done
	return checkStdin(r.data, r.err)
}

func checkStdin(data []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	if len(data) > maxStdinPrompt {
		return nil, fmt.Errorf("the prompt on stdin is longer than %d MiB", maxStdinPrompt>>20)
	}
	return data, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
