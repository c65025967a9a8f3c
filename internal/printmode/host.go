package printmode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/agentdefs"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/tool"
)

// Init is what the host's initialize request (or, without one, the
// command line alone) asks of the session that print mode opens.
type Init struct {
	// SystemPrompt, when set, replaces sluice's system prompt.
	SystemPrompt *string
	// AppendSystemPrompt is added to the system prompt.
	AppendSystemPrompt string
	// Title names the session (the SDK's title option, as --name).
	Title string
	// Settings and DisallowedTools are the SDK's settings and
	// disallowedTools when it delivers them in initialize
	// (--initialize-fields): settings as --settings takes them (an object,
	// or a string naming a file), tool rules as --disallowedTools.
	Settings        json.RawMessage
	DisallowedTools []string
	// MCPServers is the host's mcpServers object (Claude Code's
	// --mcp-config shape, {"mcpServers": ...}), for Open to start.
	MCPServers json.RawMessage
	// Tools are the tools of the host's in-process MCP servers.
	Tools []tool.Tool
	// Hooks put print mode's host in the session's tool calls: the hook
	// callbacks and can_use_tool the host registered, the tool rules.
	Hooks agent.Hooks
	// Subagents are the host's agent definitions (the Agent SDK's agents).
	Subagents []agent.Subagent

	jsonSchema json.RawMessage // initialize's, over Config.JSONSchema
	// initialized says the host's initialize asked for the session (and
	// reached its in-process MCP servers).
	initialized bool
}

// OpenFunc opens the session of a print-mode run.
type OpenFunc func(Init) (*agent.Session, error)

// userInput is one user message read from the host.
type userInput struct {
	text   string
	images []agent.Image
	line   json.RawMessage // as read, for --replay-user-messages
}

// host is print mode's side of a run: the session (opened once, after the
// host's initialize when one comes first), the input reader, the control
// protocol and the state it changes. It drives the session through its
// handle (session.Session), as the other faces do, and takes of the agent
// only what a process running it has (localParts).
//
// Its fields fall in four groups by how they are shared:
//   - set by newHost and Run before any goroutine starts, then only read;
//   - set once inside openOnce and read only after opened is closed;
//   - guarded by mu: the reader, the control requests it dispatches and
//     the turns all reach them;
//   - safe on their own (channels, and types that lock for themselves).
type host struct {
	// Set before the run starts, then read-only.
	cfg  Config
	w    *cclines.Writer
	out  *outbox
	open OpenFunc
	// st and prompts are the host's messages given to the session mid-run
	// and those read but not yet given (stream-json input; Run sets them).
	st      *steerer
	prompts *queue[userInput]

	// Set once by openWith (inside openOnce), read after opened is closed.
	openOnce sync.Once
	opened   chan struct{}
	sess     session.Session
	loc      localParts
	openErr  error
	// structured is the StructuredOutput tool, when a schema was given.
	structured *cclines.StructuredOutput

	// Safe on their own.
	//
	// tasks follows the background commands of the run's subscription (it
	// has its own lock).
	tasks cclines.TaskLines
	// drained is closed (and drainedNow set, under mu) once the lines read
	// while initialize was handled are handled.
	drained chan struct{}

	// mu guards every field below.
	mu sync.Mutex
	// initDone, once the host sent initialize, is closed when it has been
	// answered: whatever comes after it waits for the session it opens.
	initDone chan struct{}
	// deferred are the lines read while initialize was handled.
	deferred   []deferredLine
	drainedNow bool
	hooks      map[string][]hookMatcher // by hook event name
	sdkMCP     []string                 // the host's in-process MCP servers
	disabled   map[string]bool          // MCP servers toggled off
	mode       string                   // as the host named it (dontAsk, auto, ...)
	lastInput  int                      // the context's tokens, from the last response
	sdkStatus  []streamjson.MCPServer   // the host's in-process servers
	spent      float64                  // the session's cost so far, for MaxBudgetUSD
	// sessionState is the last system/session_state_changed written.
	sessionState string
	// results counts the result lines written (result_index).
	results int
	// decided are the permission decisions made here (hooks, rules, the
	// host's can_use_tool), by tool call id, for tool_result_meta.
	decided map[string]cclines.Decision
	// deniedStop is the denial with interrupt: true that stopped the turn.
	deniedStop *agent.Denial
}

type hookMatcher struct {
	Matcher         string   `json:"matcher"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	Timeout         float64  `json:"timeout"`
}

func newHost(cfg Config, w *cclines.Writer, sess *agent.Session) *host {
	h := &host{
		cfg: cfg, w: w, out: newOutbox(w), open: cfg.Open, opened: make(chan struct{}), drained: make(chan struct{}),
		hooks: map[string][]hookMatcher{}, disabled: map[string]bool{}, mode: cfg.PermissionMode,
		decided: map[string]cclines.Decision{},
	}
	if sess != nil {
		h.sess, h.loc = session.Local(sess), localOf(sess)
		h.openOnce.Do(func() { close(h.opened) })
	}
	return h
}

// localParts is what print mode takes of a session that only the process
// running it has; everything else goes through the session's handle.
type localParts struct {
	// subscribe subscribes with opts: stream-json's partial messages need
	// the model's parts (agent.SubscribeOptions.ModelParts).
	subscribe func(opts agent.SubscribeOptions) (protocol.Snapshot, *agent.Subscription)
	// stopTasks ends the session's background commands (settleTasks).
	stopTasks func()
}

// localOf takes the local parts of s, which runs in this process.
func localOf(s *agent.Session) localParts {
	return localParts{subscribe: s.SnapshotAndSubscribe, stopTasks: s.StopTasks}
}

// session returns the session, opening it as the command line alone asks
// when no initialize did.
func (h *host) session() (session.Session, error) {
	h.mu.Lock()
	done := h.initDone
	h.mu.Unlock()
	if done != nil {
		<-done
	}
	return h.openWith(Init{})
}

// openWith returns the session, opening it with init on the first call.
func (h *host) openWith(init Init) (session.Session, error) {
	h.openOnce.Do(func() {
		defer close(h.opened)
		if h.open == nil {
			h.openErr = errors.New("print mode was given no session")
			return
		}
		if !init.initialized {
			h.unreachedSDKServers()
		}
		init.Hooks = h.agentHooks()
		schema := h.cfg.JSONSchema
		if len(init.jsonSchema) > 0 && string(init.jsonSchema) != "null" {
			schema = init.jsonSchema
		}
		if len(schema) > 0 {
			h.structured = cclines.NewStructuredOutput(schema)
			init.Tools = append(init.Tools, h.structured)
		}
		var as *agent.Session
		if as, h.openErr = h.open(init); h.openErr == nil {
			h.sess, h.loc = session.Local(as), localOf(as)
		}
	})
	<-h.opened
	return h.sess, h.openErr
}

// read reads the host's stream-json input until it ends: control
// responses reach the requests waiting for them at once; the other lines
// are handled in order (user messages queued for the turns, control
// requests answered), those after an initialize once it is answered. The
// reader itself never waits on a turn, so an interrupt or an answer to
// can_use_tool is read whatever runs. It closes prompts when done.
func (h *host) read(ctx context.Context, r io.Reader, prompts *queue[userInput]) error {
	defer prompts.close()
	defer func() {
		h.mu.Lock()
		done := h.initDone
		early := h.deferred
		if done == nil {
			h.deferred = nil
		}
		h.mu.Unlock()
		if done != nil {
			<-h.drained
			return
		}
		// The input ended without the initialize that --await-initialize
		// waited for: the lines held for it are handled as they came.
		for _, l := range early {
			h.dispatch(ctx, l.in, l.line, prompts)
		}
	}()
	defer h.out.close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, MaxInputLine)
		if trimmed := strings.TrimSpace(string(line)); trimmed != "" {
			in, skip, derr := decodeLine([]byte(trimmed))
			if derr != nil {
				return derr
			}
			switch {
			case skip != "":
				fmt.Fprintf(h.cfg.Stderr, "sluice: ignoring an input line: %s: %.200s\n", skip, trimmed)
			case in.Type == "control_response":
				if in.Response == nil || !h.out.deliver(in) {
					fmt.Fprintf(h.cfg.Stderr, "sluice: ignoring a control_response that answers no request: %.200s\n", trimmed)
				}
			default:
				h.mu.Lock()
				// With --await-initialize, what comes before the
				// initialize waits for it too.
				early := h.cfg.AwaitInitialize && h.initDone == nil && !in.initialize()
				defer_ := early || (h.initDone != nil && !h.drainedNow)
				if defer_ {
					h.deferred = append(h.deferred, deferredLine{in, trimmed})
				}
				h.mu.Unlock()
				if !defer_ {
					h.dispatch(ctx, in, trimmed, prompts)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// initialize reports whether in is the host's initialize request.
func (in incoming) initialize() bool {
	var hdr requestHeader
	return in.Type == "control_request" && json.Unmarshal(in.Request, &hdr) == nil && hdr.Subtype == "initialize"
}

type deferredLine struct {
	in   incoming
	line string
}

// dispatch handles one input line other than a control response.
func (h *host) dispatch(ctx context.Context, in incoming, line string, prompts *queue[userInput]) {
	switch in.Type {
	case "user":
		if text, images, _ := userContent([]byte(line)); text != "" || len(images) > 0 {
			prompts.push(userInput{text: text, images: images, line: json.RawMessage(line)})
		}
	case "control_request":
		var hdr requestHeader
		json.Unmarshal(in.Request, &hdr)
		if hdr.Subtype != "initialize" {
			h.control(ctx, in.RequestID, hdr.Subtype, in.Request)
			return
		}
		h.mu.Lock()
		if h.initDone != nil {
			h.mu.Unlock()
			respond(h.w, in.RequestID, nil, errors.New("already initialized"))
			return
		}
		h.initDone = make(chan struct{})
		h.mu.Unlock()
		// Initialize may ask the host's MCP servers for their tools, whose
		// answers the reader must go on reading; the lines after it wait.
		go func() {
			h.initialize(in.RequestID, in.Request)
			close(h.initDone)
			for {
				h.mu.Lock()
				if len(h.deferred) == 0 {
					h.drainedNow = true
					h.mu.Unlock()
					close(h.drained)
					return
				}
				next := h.deferred[0]
				h.deferred = h.deferred[1:]
				h.mu.Unlock()
				h.dispatch(ctx, next.in, next.line, prompts)
			}
		}()
	case "control_cancel_request", "keep_alive":
		// Nothing waits on the host's side for these.
	default:
		fmt.Fprintf(h.cfg.Stderr, "sluice: ignoring an input line of type %q\n", in.Type)
	}
}

// initialize answers the host's initialize request and opens the session
// as it asks.
func (h *host) initialize(id, raw json.RawMessage) {
	var req struct {
		Hooks                 map[string][]hookMatcher   `json:"hooks"`
		SDKMCPServers         []string                   `json:"sdkMcpServers"`
		SDKMCPServerManifests map[string]sdkMCPManifest  `json:"sdkMcpServerManifests"`
		SystemPrompt          []string                   `json:"systemPrompt"`
		AppendSystemPrompt    string                     `json:"appendSystemPrompt"`
		Agents                map[string]json.RawMessage `json:"agents"`
		MCPServers            json.RawMessage            `json:"mcpServers"`
		JSONSchema            json.RawMessage            `json:"jsonSchema"`
		Title                 string                     `json:"title"`
		Settings              json.RawMessage            `json:"settings"`
		DisallowedTools       []string                   `json:"disallowedTools"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		respond(h.w, id, nil, fmt.Errorf("malformed initialize request: %w", err))
		return
	}
	var subagents []agent.Subagent
	if len(req.Agents) > 0 {
		spec, _ := json.Marshal(req.Agents)
		var err error
		if subagents, err = agentdefs.ParseJSON(string(spec)); err != nil {
			respond(h.w, id, nil, fmt.Errorf("initialize: agents: %w", err))
			return
		}
	}
	select {
	case <-h.opened:
		respond(h.w, id, nil, errors.New("already initialized"))
		return
	default:
	}
	h.mu.Lock()
	for ev, ms := range req.Hooks {
		h.hooks[ev] = append(h.hooks[ev], ms...)
	}
	h.sdkMCP = sdkServers(req.SDKMCPServers, h.cfg.SDKMCPServers)
	h.mu.Unlock()

	init := Init{AppendSystemPrompt: req.AppendSystemPrompt, Title: req.Title, DisallowedTools: req.DisallowedTools, Subagents: subagents, jsonSchema: req.JSONSchema, initialized: true}
	if len(req.Settings) > 0 && string(req.Settings) != "null" {
		init.Settings = req.Settings
	}
	if len(req.SystemPrompt) > 0 {
		s := strings.Join(req.SystemPrompt, "\n\n")
		init.SystemPrompt = &s
	}
	if len(req.MCPServers) > 0 && string(req.MCPServers) != "null" && string(req.MCPServers) != "{}" {
		init.MCPServers, _ = json.Marshal(map[string]json.RawMessage{"mcpServers": req.MCPServers})
	}
	for _, name := range h.sdkMCP {
		tools, err := h.sdkMCPTools(name, req.SDKMCPServerManifests[name])
		status := "connected"
		if err != nil {
			fmt.Fprintf(h.cfg.Stderr, "sluice: MCP server %s (in the host): %v\n", name, err)
			status = "failed"
		}
		init.Tools = append(init.Tools, tools...)
		h.mu.Lock()
		h.sdkStatus = append(h.sdkStatus, streamjson.MCPServer{Name: name, Status: status, Source: streamjson.SourceSDK})
		h.mu.Unlock()
	}
	sess, err := h.openWith(init)
	if err != nil {
		respond(h.w, id, nil, err)
		return
	}
	resp := h.initializeResponse(sess, len(init.MCPServers) > 0)
	// The SDK ends the session unless what it delivered here is
	// confirmed; Open applied it (or failed above).
	if init.Settings != nil {
		resp["settings_applied"] = true
	}
	if len(init.DisallowedTools) > 0 {
		resp["disallowed_tools_applied"] = true
	}
	respond(h.w, id, resp, nil)
}

// initializeResponse is initialize's answer with the fields the Agent
// SDK's SDKControlInitializeResponse declares.
func (h *host) initializeResponse(sess session.Session, mcpApplied bool) map[string]any {
	models := []map[string]any{}
	for _, m := range h.cfg.Models {
		models = append(models, map[string]any{"value": m, "displayName": m, "description": m})
	}
	if len(models) == 0 {
		models = append(models, map[string]any{"value": sess.Model(), "displayName": sess.Model(), "description": "the session's model"})
	}
	resp := map[string]any{
		"commands":                []any{},
		"agents":                  agentInfos(sess),
		"output_style":            "default",
		"available_output_styles": []string{"default"},
		"models":                  models,
		"account":                 map[string]any{"apiKeySource": h.cfg.APIKeySource, "apiProvider": "firstParty"},
		"current_permission_mode": h.reportedMode(sess),
		"hooks_applied":           true,
		"sluice_version":          h.cfg.Version,
		"pid":                     os.Getpid(),
		"claude_code_version":     streamjson.ClaudeCodeVersion,
		"capabilities":            streamjson.Capabilities,
		"analytics_disabled":      true,
		"fast_mode_state":         "off",
		// initialize is answered before any turn has started.
		"session_state": stateIdle,
	}
	if mcpApplied {
		resp["mcp_servers_applied"] = true
	}
	return resp
}

func (h *host) reportedMode(sess session.Session) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mode == "dontAsk" || h.mode == "auto" {
		return h.mode
	}
	return string(sess.PermissionMode())
}

// control answers one host request other than initialize.
func (h *host) control(ctx context.Context, id json.RawMessage, subtype string, raw json.RawMessage) {
	sess, err := h.session()
	if err != nil {
		respond(h.w, id, nil, err)
		return
	}
	resp, err := h.answer(ctx, sess, subtype, raw)
	respond(h.w, id, resp, err)
}

func (h *host) answer(ctx context.Context, sess session.Session, subtype string, raw json.RawMessage) (any, error) {
	switch subtype {
	case "interrupt":
		// The turn ends; the host's messages queued behind it (sent
		// while it ran, too late to steer into it) run next.
		if sess.Running() {
			if err := sess.Interrupt(ctx, "interrupted"); err != nil {
				return nil, err
			}
		}
		return map[string]any{"still_queued": h.stillQueued(sess)}, nil
	case "set_permission_mode":
		var req struct {
			Mode string `json:"mode"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("malformed set_permission_mode request: %w", err)
		}
		m, err := sessionMode(req.Mode)
		if err != nil {
			return nil, err
		}
		if h.cfg.Restricted && m == protocol.ModeBypassPermissions {
			return nil, errors.New("bypassPermissions is not supported in restricted mode")
		}
		if err := sess.SetPermissionMode(ctx, m); err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.mode = req.Mode
		h.mu.Unlock()
		return map[string]any{}, nil
	case "set_model":
		var req struct {
			Model *string `json:"model"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("malformed set_model request: %w", err)
		}
		m := h.cfg.Model
		if req.Model != nil && *req.Model != "" && *req.Model != "default" {
			m = *req.Model
		}
		if err := sess.SetModel(ctx, m); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	case "set_max_thinking_tokens":
		var req struct {
			MaxThinkingTokens *int `json:"max_thinking_tokens"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("malformed set_max_thinking_tokens request: %w", err)
		}
		n := 0
		if req.MaxThinkingTokens != nil {
			n = *req.MaxThinkingTokens
		}
		if err := sess.SetThinkingBudget(ctx, n); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	case "mcp_status":
		return map[string]any{"mcpServers": h.mcpServers()}, nil
	case "mcp_reconnect", "mcp_toggle":
		var req struct {
			ServerName string `json:"serverName"`
			Enabled    *bool  `json:"enabled"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("malformed %s request: %w", subtype, err)
		}
		var status string
		for _, s := range h.mcpServers() {
			if s.Name == req.ServerName {
				status = s.Status
			}
		}
		if status == "" {
			return nil, fmt.Errorf("no MCP server named %q", req.ServerName)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if subtype == "mcp_toggle" {
			if req.Enabled == nil {
				return nil, errors.New("mcp_toggle needs enabled")
			}
			h.disabled[req.ServerName] = !*req.Enabled
			return map[string]any{}, nil
		}
		if status == "failed" {
			return nil, fmt.Errorf("MCP server %s: reconnecting a failed server is not supported yet; restart the session", req.ServerName)
		}
		delete(h.disabled, req.ServerName)
		return map[string]any{}, nil
	case "get_context_usage":
		return h.contextUsage(sess), nil
	}
	return nil, fmt.Errorf("unsupported control request subtype: %s", subtype)
}

// mcpServers are the MCP servers with their states, as McpServerStatus
// declares them.
func (h *host) mcpServers() []streamjson.MCPServer {
	servers := h.cfg.MCPServers
	if h.cfg.MCPStatus != nil {
		servers = h.cfg.MCPStatus()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append(append([]streamjson.MCPServer{}, servers...), h.sdkStatus...)
	for i, s := range out {
		if h.disabled[s.Name] {
			out[i].Status = "disabled"
		}
	}
	return out
}

// contextUsage is get_context_usage's answer: the context the last
// response was given, of the model's window.
func (h *host) contextUsage(sess session.Session) map[string]any {
	h.mu.Lock()
	used := h.lastInput
	h.mu.Unlock()
	window := h.cfg.ContextWindow
	if window <= 0 {
		window = h.cfg.Catalogue.ContextWindow(sess.Model())
	}
	free := max(window-used, 0)
	return map[string]any{
		"categories": []map[string]any{
			{"id": "messages", "name": "Messages", "tokens": used, "color": "purple", "kind": "used"},
			{"id": "free_space", "name": "Free space", "tokens": free, "color": "gray", "kind": "free"},
		},
		"totalTokens":  used,
		"maxTokens":    window,
		"rawMaxTokens": window,
		"percentage":   float64(used) * 100 / float64(window),
		"gridRows":     [][]any{},
		"model":        sess.Model(),
		"memoryFiles":  []any{},
	}
}

// agentHooks are the session's hooks: the tool rules and the host's
// PreToolUse hooks before the mode, can_use_tool for what the mode asks,
// the host's PostToolUse hooks after.
func (h *host) agentHooks() agent.Hooks {
	ah := agent.Hooks{
		PreToolUse: h.preToolUse,
		PostToolUse: func(ctx context.Context, call agent.ToolCall, result string, isError bool) agent.HookResult {
			var o hooks.Outcome
			for _, out := range h.runHooks(ctx, "PostToolUse", call.Name, call.ID, map[string]any{
				"tool_name": call.Name, "tool_input": call.Input, "tool_response": result, "tool_use_id": call.ID,
			}) {
				o.AddJSON(hooks.PostToolUse, out)
			}
			return o.Result()
		},
		// The session's other events (UserPromptSubmit, Stop,
		// SessionStart, ...) fire the host's callbacks as the agent
		// fires the user's command hooks: the same answers, the same
		// effects.
		Event: func(ctx context.Context, ev agent.HookEvent) agent.HookResult {
			var o hooks.Outcome
			for _, out := range h.runHooks(ctx, string(ev.Name), ev.Match, "", ev.Fields) {
				o.AddJSON(hooks.Event(ev.Name), out)
			}
			return o.Result()
		},
	}
	ah.Ask = h.ask
	return ah
}

// ask answers a call that needs approval: the host's PermissionRequest
// hooks first (their decision may also stop the turn), then can_use_tool
// with --permission-prompt-tool stdio; otherwise nobody is there to answer
// and the call is denied.
func (h *host) ask(ctx context.Context, req protocol.PermissionRequest) agent.Verdict {
	if v, ok := h.permissionRequestHooks(ctx, req); ok {
		return v
	}
	if h.cfg.PermissionPromptStdio {
		return h.canUseTool(ctx, req)
	}
	return agent.Verdict{Decision: protocol.DecisionDeny}
}

// permissionRequestHooks runs the host's PermissionRequest callbacks for
// a call; the first that decides answers it.
func (h *host) permissionRequestHooks(ctx context.Context, req protocol.PermissionRequest) (agent.Verdict, bool) {
	input := json.RawMessage(req.Parameters)
	if !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	for _, out := range h.runHooks(ctx, "PermissionRequest", req.Name, req.ToolID, map[string]any{
		"tool_name": req.Name, "tool_input": input, "permission_suggestions": []any{},
	}) {
		var o struct {
			HookSpecificOutput struct {
				Decision *struct {
					Behavior     string          `json:"behavior"`
					UpdatedInput json.RawMessage `json:"updatedInput"`
					Message      string          `json:"message"`
					Interrupt    bool            `json:"interrupt"`
				} `json:"decision"`
			} `json:"hookSpecificOutput"`
		}
		if json.Unmarshal(out, &o) != nil || o.HookSpecificOutput.Decision == nil {
			continue
		}
		d := o.HookSpecificOutput.Decision
		switch d.Behavior {
		case "allow":
			in := d.UpdatedInput
			if len(in) == 0 || string(in) == "null" {
				in = nil
			}
			h.decide(req.ToolID, streamjson.PermissionDecision{Decision: "accept", Source: "hook"}, false)
			return agent.Verdict{Decision: protocol.DecisionAllow, Input: in}, true
		case "deny":
			h.decide(req.ToolID, streamjson.PermissionDecision{Decision: "reject", Source: "hook"}, d.Interrupt)
			if d.Interrupt {
				h.stopTurn(agent.Denial{ToolID: req.ToolID, Name: req.Name, Input: string(input)})
			}
			return agent.Verdict{Decision: protocol.DecisionDeny, Reason: d.Message}, true
		}
	}
	return agent.Verdict{}, false
}

func (h *host) preToolUse(ctx context.Context, call agent.ToolCall) agent.Verdict {
	v, source, reason := h.preToolUseVerdict(ctx, call)
	switch v.Decision {
	case protocol.DecisionAllow:
		h.decide(call.ID, streamjson.PermissionDecision{Decision: "accept", Source: source, ReasonType: reason}, false)
	case protocol.DecisionDeny:
		h.decide(call.ID, streamjson.PermissionDecision{Decision: "reject", Source: source, ReasonType: reason}, false)
	}
	return v
}

// preToolUseVerdict is preToolUse's verdict, with who made it.
func (h *host) preToolUseVerdict(ctx context.Context, call agent.ToolCall) (v agent.Verdict, source, reason string) {
	if server, ok := mcpServerOf(call.Name); ok {
		h.mu.Lock()
		off := h.disabled[server]
		h.mu.Unlock()
		if off {
			return agent.Verdict{Decision: protocol.DecisionDeny, Reason: fmt.Sprintf("The MCP server %s is disabled.", server)}, "config", "mcp_disabled"
		}
	}
	var o hooks.Outcome
	for _, out := range h.runHooks(ctx, "PreToolUse", call.Name, call.ID, map[string]any{
		"tool_name": call.Name, "tool_input": call.Input, "tool_use_id": call.ID,
	}) {
		o.AddJSON(hooks.PreToolUse, out)
	}
	v = o.Verdict(call.Name)
	// The hooks first, as in Claude Code; then the tool rules, whose
	// denials stand whatever a hook allowed.
	if h.cfg.Rules != nil {
		r := h.cfg.Rules(call)
		switch {
		case r.Decision == protocol.DecisionDeny:
			return r, "config", "rule"
		case v.Decision == "" && r.Decision != "":
			return r, "config", "rule"
		}
	}
	return v, "hook", ""
}

func (h *host) decide(toolID string, d streamjson.PermissionDecision, stopped bool) {
	h.mu.Lock()
	h.decided[toolID] = cclines.Decision{PermissionDecision: d, Stopped: stopped}
	h.mu.Unlock()
}

// decision is the permission decision made here about a tool call, if any.
func (h *host) decision(toolID string) (cclines.Decision, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.decided[toolID]
	delete(h.decided, toolID)
	return d, ok
}

// canUseTool asks the host whether a call may run (--permission-prompt-tool
// stdio). A host that cannot be asked denies.
func (h *host) canUseTool(ctx context.Context, req protocol.PermissionRequest) agent.Verdict {
	h.mu.Lock()
	mode := h.mode
	h.mu.Unlock()
	if mode == "dontAsk" {
		return agent.Verdict{Decision: protocol.DecisionDeny, Reason: fmt.Sprintf("Permission to use %s was not granted: the permission mode is dontAsk.", req.Name)}
	}
	input := json.RawMessage(req.Parameters)
	if !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	ask := map[string]any{
		"subtype": "can_use_tool", "tool_name": req.Name, "display_name": req.Name, "input": input,
		"permission_suggestions": []any{}, "tool_use_id": req.ToolID,
	}
	if req.CompactParams != "" {
		ask["description"] = req.CompactParams
	}
	if server, ok := mcpServerOf(req.Name); ok {
		ask["mcp_server"] = map[string]any{"name": server, "source": h.serverSource(server)}
	}
	h.state(stateRequiresAction)
	raw, err := h.out.ask(ctx, ask)
	h.state(stateRunning)
	if err != nil {
		return agent.Verdict{Decision: protocol.DecisionDeny, Reason: fmt.Sprintf("Permission to use %s was not granted: %v", req.Name, err)}
	}
	var ans struct {
		Behavior     string          `json:"behavior"`
		UpdatedInput json.RawMessage `json:"updatedInput"`
		Message      string          `json:"message"`
		Interrupt    bool            `json:"interrupt"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return agent.Verdict{Decision: protocol.DecisionDeny, Reason: "Permission was not granted: the host's answer was malformed."}
	}
	if ans.Behavior == "allow" {
		in := ans.UpdatedInput
		if len(in) == 0 || string(in) == "null" {
			in = nil
		}
		h.decide(req.ToolID, streamjson.PermissionDecision{Decision: "accept", Source: "user_temporary"}, false)
		return agent.Verdict{Decision: protocol.DecisionAllow, Input: in}
	}
	h.decide(req.ToolID, streamjson.PermissionDecision{Decision: "reject", Source: "user_reject"}, ans.Interrupt)
	if ans.Interrupt {
		// As in Claude Code, the turn ends here: the denial is the
		// call's result and the model is not asked again.
		h.stopTurn(agent.Denial{ToolID: req.ToolID, Name: req.Name, Input: string(input)})
	}
	return agent.Verdict{Decision: protocol.DecisionDeny, Reason: ans.Message}
}

// stopTurn interrupts the turn under way because the denial d asked to
// stop it; its result says so (terminal_reason aborted_tools, d in
// permission_denials).
func (h *host) stopTurn(d agent.Denial) {
	h.mu.Lock()
	h.deniedStop = &d
	h.mu.Unlock()
	if sess, err := h.session(); err == nil {
		if err := sess.Interrupt(context.Background(), fmt.Sprintf("the host denied %s and asked to stop", d.Name)); err != nil {
			fmt.Fprintf(h.cfg.Stderr, "sluice: stopping the turn: %v\n", err)
		}
	}
}

// takeDeniedStop returns, and clears, the denial that stopped the turn.
func (h *host) takeDeniedStop() *agent.Denial {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.deniedStop
	h.deniedStop = nil
	return d
}

func (h *host) serverSource(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.sdkMCP {
		if s == name {
			return "sdk"
		}
	}
	return "config"
}

// runHooks calls the host's callbacks registered for event whose matcher
// matches target, in order, and returns their outputs.
func (h *host) runHooks(ctx context.Context, event, target, toolUseID string, fields map[string]any) []json.RawMessage {
	h.mu.Lock()
	matchers := h.hooks[event]
	mode := h.mode
	h.mu.Unlock()
	var outs []json.RawMessage
	for _, m := range matchers {
		if !hookMatches(m.Matcher, target) {
			continue
		}
		for _, cb := range m.HookCallbackIDs {
			input := map[string]any{
				"session_id": h.sessionID(), "transcript_path": "", "cwd": h.workDir(),
				"permission_mode": mode, "hook_event_name": event,
			}
			for k, v := range fields {
				input[k] = v
			}
			req := map[string]any{"subtype": "hook_callback", "callback_id": cb, "input": input}
			if toolUseID != "" {
				req["tool_use_id"] = toolUseID
			}
			out, err := h.out.ask(ctx, req)
			if err != nil {
				fmt.Fprintf(h.cfg.Stderr, "sluice: %s hook %s: %v\n", event, cb, err)
				continue
			}
			outs = append(outs, out)
		}
	}
	return outs
}

func (h *host) sessionID() string {
	select {
	case <-h.opened:
		if h.sess != nil {
			return h.sess.ID()
		}
	default:
	}
	return ""
}

func (h *host) workDir() string {
	select {
	case <-h.opened:
		if h.sess != nil {
			return h.sess.WorkDir()
		}
	default:
	}
	return ""
}

// spend adds a turn's cost and reports whether the budget is now spent.
// cost estimates what u costs at modelName's list price in the
// catalogue (0 when it has none: the budget is an estimate, never a bill).
func (h *host) cost(modelName string, u protocol.Usage) float64 {
	p, ok := h.cfg.Catalogue.Price(modelName)
	if !ok {
		return 0
	}
	return p.USD(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
}

func (h *host) spend(usd float64) bool {
	if h.cfg.MaxBudgetUSD <= 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spent += usd
	return h.spent >= h.cfg.MaxBudgetUSD
}

func (h *host) overBudget() bool {
	if h.cfg.MaxBudgetUSD <= 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.spent >= h.cfg.MaxBudgetUSD
}

// hookMatches reports whether a hook's matcher (a tool name, "A|B", a
// regular expression, or empty / "*" for all) matches name.
func hookMatches(matcher, name string) bool {
	if matcher == "" || matcher == "*" || matcher == name {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	return err == nil && re.MatchString(name)
}

// mcpServerOf returns the server of an MCP tool name (mcp__server__tool).
func mcpServerOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", false
	}
	server, _, ok := strings.Cut(rest, "__")
	return server, ok
}

// agentInfos are the session's subagent kinds as initialize's answer lists
// them (the Agent SDK's AgentInfo: name, description, model).
func agentInfos(sess session.Session) []map[string]any {
	out := []map[string]any{}
	for _, d := range sess.Subagents() {
		info := map[string]any{"name": d.Name, "description": d.Description}
		if d.Model != "" {
			info["model"] = d.Model
		}
		out = append(out, info)
	}
	return out
}
