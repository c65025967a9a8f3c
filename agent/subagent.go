package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// Subagent is a kind of child session the Agent tool can start: Claude
// Code's agent definitions (.claude/agents/*.md, --agents).
type Subagent struct {
	// Name is what the model passes as subagent_type.
	Name string
	// Description tells the model when to use it.
	Description string
	// Prompt is the child's system prompt ("" for sluice's own).
	Prompt string
	// Tools names the parent's tools the child may use (nil: all of them).
	// A child never gets the Agent tool: subagents do not start subagents.
	Tools []string
	// Model is the child's model: "" or "inherit" for the parent's, an
	// alias (sonnet, opus, haiku) or a model name.
	Model string
	// Source says where it was defined (a file, "--agents", "built-in").
	Source string
}

// GeneralPurpose is the subagent kind every session with Subagents has.
var GeneralPurpose = Subagent{
	Name:        "general-purpose",
	Description: "A general agent for researching complex questions, searching code and carrying out multi-step tasks, with all the tools.",
	Source:      "built-in",
}

// SubagentRun is what one subagent's run did and cost.
type SubagentRun struct {
	// ToolID is the id of the Agent call that ran it.
	ToolID      string
	Type        string // the Subagent's Name
	Description string // the call's description
	Model       string
	// Turns counts its model responses, ToolUses its tool calls.
	Turns, ToolUses int
	Usage           protocol.Usage
	CostUSD         float64
	Duration        time.Duration
	// Denials are its tool calls refused by permissions.
	Denials []Denial
	// Err is why it failed, or nil.
	Err error
}

const (
	agentToolName = "Agent"
	taskToolName  = "Task"
)

// modelAliases are the models Claude Code's aliases name, for a parent
// that talks to Claude; for any other model an alias means the parent's.
var modelAliases = map[string]string{
	"sonnet": "claude-sonnet-4-5",
	"opus":   "claude-opus-4-1",
	"haiku":  "claude-haiku-4-5",
}

// agentTool runs a subagent: a child session with its own context, tools
// and permission answers, whose events stream nested under the call's
// block, and whose final answer is the call's result.
type agentTool struct{ s *Session }

type agentInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
	Model        string `json:"model"`
}

func (a *agentTool) Name() string { return agentToolName }

func (a *agentTool) Description() string {
	var sb strings.Builder
	sb.WriteString(`Start a subagent: a separate agent with a fresh context and its own tools, which works on the task in prompt alone and returns its final report as this tool's result. Use it for open-ended searches and multi-step work whose details need not fill your context. Call it several times in one response to run subagents in parallel. The subagent does not see this conversation, so the prompt must say everything it needs and what to report back. Its report is not shown to the user: tell the user what matters.

Agent types (subagent_type; general-purpose when omitted):`)
	for _, d := range a.s.subagents() {
		tools := "all tools"
		if d.Tools != nil {
			tools = "tools: " + strings.Join(d.Tools, ", ")
		}
		fmt.Fprintf(&sb, "\n- %s: %s (%s)", d.Name, d.Description, tools)
	}
	return sb.String()
}

func (a *agentTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"description":{"type":"string","description":"A short (3-5 word) description of the task"},` +
		`"prompt":{"type":"string","description":"The task for the agent to perform"},` +
		`"subagent_type":{"type":"string","description":"The type of agent to use for this task"},` +
		`"model":{"type":"string","enum":["sonnet","opus","haiku"],"description":"A model for this agent instead of its definition's or yours"}},` +
		`"required":["description","prompt"]}`)
}

// Kind is read-only: starting a subagent changes nothing by itself (its
// own tools ask as they would), and several may run side by side.
func (a *agentTool) Kind() tool.Kind { return tool.ReadOnly }

func (a *agentTool) Compact(params json.RawMessage) string {
	var in agentInput
	_ = json.Unmarshal(params, &in)
	if in.SubagentType != "" && in.SubagentType != GeneralPurpose.Name {
		return in.SubagentType + ": " + in.Description
	}
	return in.Description
}

func (a *agentTool) Run(ctx context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in agentInput
	if err := json.Unmarshal(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("bad parameters: %w", err)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.Result{}, errors.New("prompt is required")
	}
	def, ok := a.s.subagent(in.SubagentType)
	if !ok {
		var names []string
		for _, d := range a.s.subagents() {
			names = append(names, d.Name)
		}
		return tool.Result{}, fmt.Errorf("no agent type %q (there are: %s)", in.SubagentType, strings.Join(names, ", "))
	}
	return a.s.runSubagent(ctx, tool.CallID(ctx), def, in)
}

// Subagents returns the kinds of subagents the session's Agent tool
// offers, general-purpose first (none when it has no Agent tool).
func (s *Session) Subagents() []Subagent {
	if s.tool(agentToolName) == nil {
		return nil
	}
	return s.subagents()
}

// subagents are the kinds the Agent tool offers: general-purpose (or the
// definition that replaces it) first, then the others as given.
func (s *Session) subagents() []Subagent {
	out := []Subagent{GeneralPurpose}
	for _, d := range s.opts.Subagents {
		if d.Name == GeneralPurpose.Name {
			out[0] = d
			continue
		}
		out = append(out, d)
	}
	return out
}

func (s *Session) subagent(name string) (Subagent, bool) {
	if name == "" {
		name = GeneralPurpose.Name
	}
	for _, d := range s.subagents() {
		if d.Name == name {
			return d, true
		}
	}
	return Subagent{}, false
}

// subagentModel picks a child's model: the call's, else the definition's,
// else the parent's.
func (s *Session) subagentModel(def Subagent, override string) string {
	name := override
	if name == "" {
		name = def.Model
	}
	return ResolveModel(name, s.Model())
}

// ResolveModel is the model a definition's model field names, for a
// session whose model is current: "" and "inherit" keep it, an alias
// (sonnet, opus, haiku) is that Claude model when current is a Claude
// model or the provider's choice ("") and means current otherwise, any
// other name is itself.
func ResolveModel(name, current string) string {
	if name == "" || name == "inherit" {
		return current
	}
	if full, ok := modelAliases[name]; ok {
		if current != "" && !strings.HasPrefix(current, "claude") {
			return current // an alias of Claude means nothing to another model
		}
		return full
	}
	return name
}

// runSubagent runs one child session to the end of its answer and returns
// the answer as the call's result.
func (s *Session) runSubagent(ctx context.Context, toolID string, def Subagent, in agentInput) (tool.Result, error) {
	child, err := s.spawn(def, s.subagentModel(def, in.Model), toolID)
	if err != nil {
		return tool.Result{}, err
	}
	s.mu.Lock()
	s.children[toolID] = child
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.children, toolID)
		s.mu.Unlock()
		child.Close()
	}()
	start := time.Now()
	res, runErr := child.Run(ctx, in.Prompt)
	run := SubagentRun{
		ToolID: toolID, Type: def.Name, Description: in.Description, Model: child.Model(),
		Turns: res.Turns, ToolUses: countTools(child.Messages().Messages),
		Usage: res.Usage, CostUSD: res.CostUSD + subagentsCost(res.Subagents), Duration: time.Since(start),
		Denials: res.Denials, Err: runErr,
	}
	s.mu.Lock()
	s.subRuns = append(s.subRuns, run)
	s.mu.Unlock()
	if runErr != nil {
		if abortCause(ctx) != nil {
			return tool.Result{Content: res.Text}, runErr
		}
		report := strings.TrimSpace(res.Text + "\n\nThe subagent failed: " + runErr.Error())
		return tool.Result{Content: report + "\n\n" + run.usageLine(), IsError: true, Summary: run.summary()}, nil
	}
	return tool.Result{Content: res.Text + "\n\n" + run.usageLine(), Summary: run.summary()}, nil
}

// usageLine tells the model what the subagent used.
func (r SubagentRun) usageLine() string {
	return fmt.Sprintf("<usage>subagent_type: %s\nturns: %d\ntool_uses: %d\ninput_tokens: %d\noutput_tokens: %d</usage>",
		r.Type, r.Turns, r.ToolUses, r.Usage.InputTokens+r.Usage.CacheReadInputTokens+r.Usage.CacheCreationInputTokens, r.Usage.OutputTokens)
}

// summary is the call's short result in every face.
func (r SubagentRun) summary() string {
	s := fmt.Sprintf("%s · %d tool uses · %d tokens", r.Type, r.ToolUses,
		r.Usage.InputTokens+r.Usage.CacheReadInputTokens+r.Usage.CacheCreationInputTokens+r.Usage.OutputTokens)
	if r.CostUSD > 0 {
		s += fmt.Sprintf(" · $%.4f", r.CostUSD)
	}
	if r.Err != nil {
		s += " · failed"
	}
	return s
}

func countTools(msgs []protocol.Message) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == protocol.BlockTool {
				n++
			}
		}
	}
	return n
}

func subagentsCost(runs []SubagentRun) float64 {
	var c float64
	for _, r := range runs {
		c += r.CostUSD
	}
	return c
}

// takeSubagentRuns returns, and forgets, the subagents that ended since
// it was last called.
func (s *Session) takeSubagentRuns() []SubagentRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := s.subRuns
	s.subRuns = nil
	return runs
}

// subagentPrompt joins the system prompt of every child.
const subagentPrompt = `You are a subagent: another agent gave you the task below and will read your final answer, not the user. Work on it with your tools until it is done, then answer with a complete, concise report of what you found or did (paths, names, results); nothing else you write reaches anyone.`

// spawn makes the child session of one Agent call: the parent's provider,
// directory, memory, permission mode and hooks, its own context and
// permission answers, the tools the definition allows.
func (s *Session) spawn(def Subagent, modelName, toolID string) (*Session, error) {
	s.mu.Lock()
	mode, thinking := s.mode, s.opts.ThinkingBudget
	s.mu.Unlock()
	o := s.opts
	o.Model = modelName
	o.PermissionMode = mode
	o.ThinkingBudget = thinking
	o.BaseSystemPrompt = def.Prompt
	o.SystemPrompt = subagentPrompt
	o.SessionID = ""
	o.Store = nil // its events are recorded in the parent's session
	o.Subagents = nil
	o.ExtraTools = nil
	o.WorkDir = s.toolEnv.WorkDir
	o.Tools = []tool.Tool{}
	for _, t := range s.tools {
		if t.Name() == agentToolName || (def.Tools != nil && !slices.Contains(def.Tools, t.Name())) {
			continue
		}
		o.Tools = append(o.Tools, t)
	}
	id := o.NewID()
	o.Hooks = s.childHooks(def, id)
	child, err := newSession(o, id)
	if err != nil {
		return nil, err
	}
	child.parent, child.parentTool = s, toolID
	child.hookID, child.transcript = s.hookID, s.transcript
	child.startSource = "" // a subagent is not a session start
	child.start()
	return child, nil
}

// childHooks are the parent's hooks as a subagent fires them: its Stop is
// SubagentStop, and it starts, ends and takes prompts as no session does.
func (s *Session) childHooks(def Subagent, childID string) Hooks {
	h := s.opts.Hooks
	event := h.Event
	if event == nil {
		return h
	}
	h.Event = func(ctx context.Context, ev HookEvent) HookResult {
		switch ev.Name {
		case EventSessionStart, EventSessionEnd, EventUserPromptSubmit:
			return HookResult{}
		case EventStop:
			ev.Name = EventSubagentStop
			fields := map[string]any{"agent_id": childID, "agent_type": def.Name}
			for k, v := range ev.Fields {
				fields[k] = v
			}
			ev.Fields = fields
		}
		return event(ctx, ev)
	}
	return h
}

// forward publishes a child's event on its parent's stream, naming the
// call the child runs in (a grandchild's already names its own). Called
// with the child's bus.mu held, so the parent's stream has the child's
// events in the child's order: a child's bus.mu is taken before its
// parent's, never after.
func (s *Session) forward(ev protocol.Event) {
	if s.parent == nil || s.parentTool == "" {
		return
	}
	switch ev.(type) {
	case protocol.RunStateChanged, protocol.QueueChanged, protocol.CompactionUpdated:
		return // the child's own: its call's stage says whether it runs
	}
	h := ev.Head()
	if h.ParentToolID == "" {
		h.ParentToolID = s.parentTool
	}
	s.parent.publish(protocol.WithHeader(ev, protocol.Header{ParentToolID: h.ParentToolID}))
}

// forwardPart is forward for a model part: parentTool is the call of the
// child whose stream it is ("" for this session's own).
func (s *Session) forwardPart(p model.Part, parentTool string) {
	if s.parent == nil || s.parentTool == "" {
		return
	}
	if parentTool == "" {
		parentTool = s.parentTool
	}
	s.parent.publishPartOf(p, parentTool)
}
