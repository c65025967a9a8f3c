package cli

import (
	"flag"
	"slices"

	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/tool"
)

// ClaudeFlags are the flags of Claude Code's headless use (claude -p, and
// the command lines that the Agent SDK, cc-connect and chat bridges spawn)
// that sluice's agent command takes besides AgentFlags. Both spellings work,
// --flag=value and --flag value (the SDK writes the first).
//
// Flags that sluice cannot honour yet are accepted, and each one given is
// reported by Notes as one line for stderr: never an unknown-flag error,
// never a silent change of behaviour.
type ClaudeFlags struct {
	Print        bool
	OutputFormat string
	InputFormat  string
	Partial      bool
	Verbose      bool
	Continue     bool
	Resume       string
	Version      bool

	SystemPrompt           string
	SystemPromptFile       string
	AppendSystemPromptFile string
	AllowedTools           stringList
	DisallowedTools        stringList
	Tools                  optionalString
	PermissionPromptTool   string
	AllowDangerouslySkip   bool
	ReplayUserMessages     bool
	SessionID              string
	ForkSession            bool
	NoSessionPersistence   bool
	ResumeSessionAt        string
	MaxBudgetUSD           float64
	FallbackModel          string
	MaxThinkingTokens      int
	MaxContextTokens       int
	Thinking               string
	Effort                 string
	JSONSchema             string
	SettingSources         optionalString
	StrictMCPConfig        bool
	IncludeHookEvents      bool
	AwaitInitialize        bool
	Betas                  stringList
	Debug                  optionalBool
	DebugFile              string
	Agents                 string
	Agent                  string
	Settings               string
	Name                   string
	Restricted             bool
	MCPDebug               optionalBool

	fs *flag.FlagSet
	// settingsIgnored are the keys of --settings that sluice does not act on.
	settingsIgnored []string
}

// acceptedOnly are Claude Code's flags that sluice takes but does not act
// on, with why; Notes reports those given.
var acceptedOnly = map[string]string{
	"plugin-dir":                             "plugins are not supported",
	"plugin-dir-no-mcp":                      "plugins are not supported",
	"thinking-display":                       "thinking is shown as the model sends it",
	"task-budget":                            "task budgets are not supported",
	"permission-prompts":                     "permission prompts go to --permission-prompt-tool stdio, or are denied",
	"disable-slash-commands":                 "sluice's print mode has no slash commands",
	"ide":                                    "no IDE is connected",
	"chrome":                                 "no browser is connected",
	"no-chrome":                              "no browser is connected",
	"exclude-dynamic-system-prompt-sections": "sluice's system prompt has no dynamic sections to drop",
	"forward-subagent-text":                  "a subagent's text stays out of stream-json; its tool calls and results are written",
	"prompt-suggestions":                     "prompt suggestions are not made",
	"managed-settings":                       "sluice reads no managed settings",
	"managed-settings-in-initialize":         "sluice reads no managed settings",
	"session-mirror":                         "sessions are not mirrored",
	"project-config-root":                    "sluice reads no Claude Code project configuration",
	"resume-drops-turn":                      "a resumed session keeps its turns",
	"channels":                               "channels are not supported",
	"bare":                                   "sluice has no hooks, plugins or settings to skip",
	"autocompact":                            "use --auto-compact",
	// Claude Code's interactive, cloud and desktop flags: no counterpart
	// in sluice's print mode.
	"ax-screen-reader":                   "sluice's print mode draws nothing",
	"bg":                                 "background sessions are not supported; the session runs in this process",
	"background":                         "background sessions are not supported; the session runs in this process",
	"brief":                              "the SendUserMessage tool is not offered",
	"cloud":                              "cloud sessions are not supported",
	"desktop":                            "there is no desktop app",
	"environment":                        "cloud sessions are not supported",
	"file":                               "file downloads at startup are not supported",
	"from-pr":                            "sessions are not linked to pull requests",
	"plugin-url":                         "plugins are not supported",
	"remote-control":                     "remote control is not supported",
	"remote-control-session-name-prefix": "remote control is not supported",
	"system-prompt-snapshot":             "the system prompt is rendered for every request",
	"teleport":                           "teleport sessions are not supported",
	"tmux":                               "worktrees are not created",
	"worktree":                           "worktrees are not created; the session runs in the working directory",
	"w":                                  "worktrees are not created; the session runs in the working directory",
	"safe-mode":                          "use --setting-sources= and --strict-mcp-config to leave the customizations out",
}

// Register adds the flags to fs.
func (c *ClaudeFlags) Register(fs *flag.FlagSet) {
	c.fs = fs
	fs.BoolVar(&c.Print, "p", false, "print mode: answer the prompt and exit (same as --print)")
	fs.BoolVar(&c.Print, "print", false, "print mode: answer the prompt and exit (also chosen when --output-format or --input-format asks for JSON and stdout is not a terminal)")
	fs.StringVar(&c.OutputFormat, "output-format", "text", "print mode output: text, json or stream-json")
	fs.StringVar(&c.InputFormat, "input-format", "text", "print mode input: text, or stream-json (user messages and control requests as JSON lines on stdin)")
	fs.BoolVar(&c.Partial, "include-partial-messages", false, "stream-json: include each model stream event")
	fs.BoolVar(&c.Verbose, "verbose", false, "log more on stderr (accepted for Claude Code compatibility; never required)")
	fs.BoolVar(&c.Continue, "c", false, "continue the most recent session of this directory (same as --continue)")
	fs.BoolVar(&c.Continue, "continue", false, "continue the most recent session of this directory")
	fs.StringVar(&c.Resume, "r", "", "resume the session with this id (same as --resume)")
	fs.StringVar(&c.Resume, "resume", "", "resume the session with this id")
	fs.BoolVar(&c.Version, "v", false, "print the version and exit (same as --version)")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")

	fs.StringVar(&c.SystemPrompt, "system-prompt", "", "the system prompt, in place of sluice's")
	fs.StringVar(&c.SystemPromptFile, "system-prompt-file", "", "read the system prompt from this file")
	fs.StringVar(&c.AppendSystemPromptFile, "append-system-prompt-file", "", "read text to add to the system prompt from this file")
	for _, n := range []string{"allowedTools", "allowed-tools"} {
		fs.Var(&c.AllowedTools, n, `tool rules that run without asking, comma or space separated: Bash(git log:*), Edit, Read(./src/**), mcp__server__tool (repeatable)`)
	}
	for _, n := range []string{"disallowedTools", "disallowed-tools"} {
		fs.Var(&c.DisallowedTools, n, "tool rules that are always refused, in --allowedTools' syntax (repeatable)")
	}
	fs.Var(&c.Tools, "tools", `the built-in tools offered to the model, comma separated ("" for none, "default" for all)`)
	fs.StringVar(&c.PermissionPromptTool, "permission-prompt-tool", "", `who answers permission prompts: "stdio" asks the host with can_use_tool control requests`)
	fs.BoolVar(&c.AllowDangerouslySkip, "allow-dangerously-skip-permissions", false, "let the session switch to bypassPermissions later (set_permission_mode)")
	fs.BoolVar(&c.ReplayUserMessages, "replay-user-messages", false, "stream-json: echo each user message read from stdin back on stdout")
	fs.StringVar(&c.SessionID, "session-id", "", "the id of the new session (a UUID)")
	fs.BoolVar(&c.ForkSession, "fork-session", false, "with --resume or --continue: continue in a new session, leaving the old one as it was")
	fs.BoolVar(&c.NoSessionPersistence, "no-session-persistence", false, "do not save the session")
	fs.StringVar(&c.ResumeSessionAt, "resume-session-at", "", "with --resume: resume at this message (the messages after it are dropped)")
	fs.Float64Var(&c.MaxBudgetUSD, "max-budget-usd", 0, "stop the run once it has cost this many dollars")
	fs.StringVar(&c.FallbackModel, "fallback-model", "", "models to switch to, in order, when the model is overloaded or failing (comma-separated; after 3 such answers in a row)")
	fs.IntVar(&c.MaxThinkingTokens, "max-thinking-tokens", 0, "extended thinking budget in tokens (same as --thinking-budget)")
	fs.IntVar(&c.MaxContextTokens, "max-context-tokens", 0, "the model's context window in tokens (same as --context-window)")
	fs.StringVar(&c.Thinking, "thinking", "", `thinking mode: "enabled" or "adaptive" (the model decides how much; a --max-thinking-tokens budget wins), "disabled"`)
	fs.StringVar(&c.Effort, "effort", "", "effort level of the requests: low, medium, high, xhigh or max")
	fs.StringVar(&c.JSONSchema, "json-schema", "", "JSON schema of a structured answer (result.structured_output)")
	fs.Var(&c.SettingSources, "setting-sources", "settings sources read for hooks and memory files: user, project, local (comma-separated; empty for none)")
	fs.BoolVar(&c.StrictMCPConfig, "strict-mcp-config", false, "use only the MCP servers of --mcp-config (sluice reads no others)")
	fs.BoolVar(&c.IncludeHookEvents, "include-hook-events", false, "stream-json: system/hook_started and hook_response lines for each command hook run")
	fs.BoolVar(&c.AwaitInitialize, "await-initialize", false, "stream-json: wait for the host's initialize control request before the first message")
	fs.Var(&c.Betas, "betas", "Anthropic beta names for the anthropic-beta header (comma or space separated, repeatable)")
	fs.Var(&c.Debug, "d", "diagnostics at debug level on stderr (same as --debug)")
	fs.Var(&c.Debug, "debug", "diagnostics at debug level on stderr (a category filter value is accepted and not applied)")
	fs.StringVar(&c.DebugFile, "debug-file", "", "write diagnostics at debug level to this file")
	fs.StringVar(&c.Agents, "agents", "", `subagent definitions as JSON, or a file holding them: {"name": {"description": ..., "prompt": ..., "tools": [...], "model": ...}}`)
	fs.StringVar(&c.Agent, "agent", "", "run the session as this subagent: its prompt, tools and model")
	fs.StringVar(&c.Settings, "settings", "", "a Claude Code settings file, or its JSON: hooks, permissions (allow, deny, defaultMode, additionalDirectories), model")
	fs.StringVar(&c.Name, "name", "", "the session's name in session lists")
	fs.StringVar(&c.Name, "n", "", "the session's name (same as --name)")
	fs.Var(new(stringList), "initialize-fields", "the fields the host's initialize delivers (settings, disallowedTools); sluice reads them from initialize when given")
	fs.Var(&c.MCPDebug, "mcp-debug", "MCP diagnostics at debug level on stderr (same as --debug)")
	fs.BoolVar(&c.Restricted, "restricted", false, "no Bash or WebFetch unless --tools names them, no settings files (--settings still applies), no bypassPermissions")
	for _, n := range []string{
		"environment", "file", "plugin-url", "remote-control-session-name-prefix", "system-prompt-snapshot",
		"plugin-dir", "plugin-dir-no-mcp", "thinking-display", "task-budget", "permission-prompts",
		"managed-settings", "project-config-root", "resume-drops-turn", "channels",
		"autocompact",
	} {
		fs.Var(new(stringList), n, "accepted for Claude Code compatibility")
	}
	for _, n := range []string{
		"disable-slash-commands", "ide", "chrome", "no-chrome", "exclude-dynamic-system-prompt-sections",
		"forward-subagent-text", "managed-settings-in-initialize", "session-mirror", "bare", "prompt-suggestions",
		"ax-screen-reader", "bg", "background", "brief", "cloud", "desktop", "from-pr", "remote-control", "teleport", "tmux",
		"worktree", "w", "safe-mode",
	} {
		fs.Var(new(optionalBool), n, "accepted for Claude Code compatibility")
	}
}

// Given reports whether the flag name was on the command line.
func (c *ClaudeFlags) Given(name string) bool { return setFlags(c.fs)[name] }

// Notes are the stderr lines for the given flags that sluice accepts but
// does not honour, one per flag, in a stable order.
func (c *ClaudeFlags) Notes() []string {
	set := setFlags(c.fs)
	var names []string
	for n := range set {
		short := map[string]string{"d": "debug", "w": "worktree", "bg": "background"}
		if long, ok := short[n]; ok {
			n = long
		}
		if _, ok := acceptedOnly[n]; ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	names = compactStrings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("sluice: --%s is accepted for Claude Code compatibility and ignored: %s", n, acceptedOnly[n]))
	}
	return out
}

// SettingsNote is the stderr line naming the keys of --settings that
// sluice does not act on, or "" (call it after ApplyTo).
func (c *ClaudeFlags) SettingsNote() string {
	if len(c.settingsIgnored) == 0 {
		return ""
	}
	return fmt.Sprintf("sluice: --settings: %s accepted for Claude Code compatibility and ignored (sluice takes hooks, permissions and model)", strings.Join(c.settingsIgnored, ", "))
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// WantsPrint reports whether the agent runs in print mode: -p, or, as
// Claude Code decides when the SDKs spawn it without -p, a JSON input or
// output format with stdout not a terminal.
func (c *ClaudeFlags) WantsPrint(stdoutTerminal bool) bool {
	if c.Print {
		return true
	}
	if stdoutTerminal {
		return false
	}
	set := setFlags(c.fs)
	return (set["output-format"] && c.OutputFormat != "text") || (set["input-format"] && c.InputFormat != "text")
}

// SelectTools is --tools: the built-in tools named in spec (comma or
// space separated), all of them for "default", none for "". It returns
// the names that are no built-in tool.
func SelectTools(workDir, spec string) ([]tool.Tool, []string) {
	if strings.TrimSpace(spec) == "default" {
		return nil, nil
	}
	all := tools.BuiltinsIn(workDir)
	out := []tool.Tool{}
	var unknown []string
	for _, name := range ToolList([]string{spec}) {
		found := false
		for _, t := range all {
			if t.Name() == name {
				out = append(out, t)
				found = true
			}
		}
		if !found {
			unknown = append(unknown, name)
		}
	}
	return out, unknown
}

// ToolList splits rule lists as Claude Code takes them: each value may
// hold several rules separated by commas or spaces, but never inside
// parentheses (Bash(git log:*) is one rule).
func ToolList(values []string) []string {
	var out []string
	for _, v := range values {
		depth, start := 0, 0
		flush := func(end int) {
			if r := strings.TrimSpace(v[start:end]); r != "" {
				out = append(out, r)
			}
		}
		for i, r := range v {
			switch {
			case r == '(':
				depth++
			case r == ')' && depth > 0:
				depth--
			case (r == ',' || r == ' ') && depth == 0:
				flush(i)
				start = i + 1
			}
		}
		flush(len(v))
	}
	return out
}

// ApplyTo carries the flags that are spellings of AgentFlags' into af:
// --max-thinking-tokens, --thinking=disabled, --max-context-tokens,
// --append-system-prompt-file.
func (c *ClaudeFlags) ApplyTo(af *AgentFlags) error {
	if c.MaxThinkingTokens < 0 || c.MaxContextTokens < 0 {
		return fmt.Errorf("--max-thinking-tokens and --max-context-tokens must not be negative")
	}
	if c.MaxContextTokens > 0 {
		af.ContextWindow = c.MaxContextTokens
	}
	if c.MaxThinkingTokens > 0 {
		af.ThinkingBudget = c.MaxThinkingTokens
	}
	switch c.Thinking {
	case "":
	case "enabled", "adaptive":
		af.AdaptiveThinking = true
	case "disabled":
		af.ThinkingBudget = 0
	default:
		return fmt.Errorf("--thinking: want enabled, adaptive or disabled, not %q", c.Thinking)
	}
	if c.Effort != "" {
		if !slices.Contains(model.Efforts, c.Effort) {
			return fmt.Errorf("--effort: want one of %s, not %q", strings.Join(model.Efforts, ", "), c.Effort)
		}
		af.Effort = c.Effort
	}
	af.Betas = ToolList(c.Betas)
	af.FallbackModels = ToolList([]string{c.FallbackModel})
	if c.Restricted {
		// Claude Code's --restricted ignores the settings files; --settings
		// still applies. Memory files are not settings: they stay.
		af.NoSettingsFiles = true
	}
	if c.Settings != "" {
		st, err := LoadSettings(c.Settings)
		if err != nil {
			return err
		}
		c.applySettings(st, af)
	}
	if c.SettingSources.Given {
		af.SettingSources = []hooks.Source{} // "" names no source
		for _, name := range strings.FieldsFunc(c.SettingSources.Value, func(r rune) bool { return r == ',' || r == ' ' }) {
			src := hooks.Source(name)
			if !slices.Contains(hooks.AllSources, src) {
				return fmt.Errorf("--setting-sources: unknown source %q (want user, project or local)", name)
			}
			af.SettingSources = append(af.SettingSources, src)
		}
	}
	if c.AppendSystemPromptFile != "" {
		b, err := os.ReadFile(c.AppendSystemPromptFile)
		if err != nil {
			return fmt.Errorf("--append-system-prompt-file: %w", err)
		}
		af.SystemPrompt = strings.TrimSpace(strings.Join([]string{af.SystemPrompt, string(b)}, "\n\n"))
	}
	return nil
}

// applySettings takes --settings: its hooks and rules join the others;
// its mode and model count where the command line names none.
func (c *ClaudeFlags) applySettings(st Settings, af *AgentFlags) {
	af.MoreHooks = st.Hooks
	c.AllowedTools = append(c.AllowedTools, st.Allow...)
	c.DisallowedTools = append(c.DisallowedTools, st.Deny...)
	af.AddDirs = append(af.AddDirs, st.AddDirs...)
	given := setFlags(af.fs)
	if st.DefaultMode != "" && !given["permission-mode"] && !given["dangerously-skip-permissions"] {
		af.PermissionMode = st.DefaultMode
	}
	if st.Model != "" && !given["model"] {
		af.Model = st.Model
	}
	c.settingsIgnored = st.Ignored
}

// codeRunningTools are the built-in tools --restricted leaves out unless
// --tools names them, as Claude Code's --restricted does.
var codeRunningTools = []string{"Bash", "BashOutput", "KillShell", "WebFetch"}

// RestrictedTools are the built-in tools of a --restricted run without
// --tools: all but those that run commands or fetch from the web.
func RestrictedTools(workDir string) []tool.Tool {
	var out []tool.Tool
	for _, t := range tools.BuiltinsIn(workDir) {
		if !slices.Contains(codeRunningTools, t.Name()) {
			out = append(out, t)
		}
	}
	return out
}

// ReplacementSystemPrompt is the system prompt that replaces sluice's
// (--system-prompt or its file), or "" for sluice's own.
func (c *ClaudeFlags) ReplacementSystemPrompt() (string, error) {
	if c.SystemPrompt != "" && c.SystemPromptFile != "" {
		return "", fmt.Errorf("--system-prompt and --system-prompt-file exclude each other")
	}
	if c.SystemPromptFile != "" {
		b, err := os.ReadFile(c.SystemPromptFile)
		if err != nil {
			return "", fmt.Errorf("--system-prompt-file: %w", err)
		}
		return string(b), nil
	}
	return c.SystemPrompt, nil
}

// optionalString is a string flag that remembers whether it was given, so
// that an empty value ("--tools=") differs from none.
type optionalString struct {
	Value string
	Given bool
}

func (o *optionalString) String() string { return o.Value }
func (o *optionalString) Set(v string) error {
	o.Value, o.Given = v, true
	return nil
}

// optionalBool is a flag that may be given bare (--debug) or with a value
// (--debug=api), as commander's optional arguments are; the value is kept.
type optionalBool struct {
	On    bool
	Value string
}

func (o *optionalBool) String() string   { return strconv.FormatBool(o.On) }
func (o *optionalBool) IsBoolFlag() bool { return true }
func (o *optionalBool) Set(v string) error {
	o.On, o.Value = v != "false", v
	return nil
}
