package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/protocol"
)

// Agent is the runner as a session's hooks (agent.Options.Hooks): the
// events that have hooks configured fire them; the others cost nothing.
func (r *Runner) Agent() agent.Hooks {
	var h agent.Hooks
	if r.Has(PreToolUse) {
		h.PreToolUse = r.preToolUse
	}
	if r.Has(PostToolUse) {
		h.PostToolUse = r.postToolUse
	}
	for _, ev := range []Event{UserPromptSubmit, Stop, SessionStart, SessionEnd, PreCompact, Notification} {
		if r.Has(ev) {
			h.Event = r.event
			break
		}
	}
	return h
}

func (r *Runner) preToolUse(ctx context.Context, call agent.ToolCall) agent.Verdict {
	out := r.Run(ctx, PreToolUse, call.Name, Input{SessionID: call.SessionID, TranscriptPath: call.TranscriptPath,
		Fields: map[string]any{"tool_name": call.Name, "tool_input": json.RawMessage(call.Input), "tool_use_id": call.ID}})
	return out.Verdict(call.Name)
}

// Verdict is a PreToolUse outcome as the agent takes it.
func (o Outcome) Verdict(toolName string) agent.Verdict {
	v := agent.Verdict{Reason: o.PermissionReason, Halt: o.Halt, StopReason: o.StopReason}
	switch o.Permission {
	case "allow":
		v.Decision, v.Input = protocol.DecisionAllow, o.UpdatedInput
	case "deny":
		v.Decision = protocol.DecisionDeny
		if v.Reason == "" {
			v.Reason = "A PreToolUse hook refused this call of " + toolName + "."
		}
	case "ask":
		v.Decision = agent.VerdictAsk
	}
	if o.Halt && v.Decision == "" {
		// Claude Code stops before the call when a hook says so.
		v.Decision, v.Reason = protocol.DecisionDeny, "A PreToolUse hook stopped the run: "+o.StopReason
	}
	return v
}

func (r *Runner) postToolUse(ctx context.Context, call agent.ToolCall, result string, isError bool) agent.HookResult {
	out := r.Run(ctx, PostToolUse, call.Name, Input{SessionID: call.SessionID, TranscriptPath: call.TranscriptPath,
		Fields: map[string]any{"tool_name": call.Name, "tool_input": json.RawMessage(call.Input), "tool_use_id": call.ID,
			"tool_response": result, "is_error": isError}})
	return out.Result()
}

func (r *Runner) event(ctx context.Context, ev agent.HookEvent) agent.HookResult {
	out := r.Run(ctx, Event(ev.Name), ev.Match, Input{SessionID: ev.SessionID, TranscriptPath: ev.TranscriptPath, Fields: ev.Fields})
	return out.Result()
}

// Result is an outcome of any event but PreToolUse as the agent takes it.
func (o Outcome) Result() agent.HookResult {
	res := agent.HookResult{Block: o.Block, Reason: o.Reason, Halt: o.Halt, StopReason: o.StopReason}
	for _, c := range o.Context {
		res.Context = join(res.Context, c)
	}
	return res
}

// AddJSON folds one hook's JSON answer into the outcome: what a command
// hook prints, or what an SDK host's hook callback returns (the same
// document).
func (o *Outcome) AddJSON(ev Event, doc []byte) { o.add(ev, result{stdout: doc}) }

// ForProject is a session's hooks for a project directory: those of the
// user's and the project's settings files (Files), run in that directory
// with the child environment of the policy env (package childenv) plus
// CLAUDE_PROJECT_DIR.
func ForProject(home, projectDir string, env childenv.Policy, logger *slog.Logger) (agent.Hooks, error) {
	return ForSources(home, projectDir, AllSources, env, logger)
}

// ForSources is ForProject reading only the given settings sources.
func ForSources(home, projectDir string, sources []Source, env childenv.Policy, logger *slog.Logger) (agent.Hooks, error) {
	r, err := NewRunner(home, projectDir, sources, nil, env, logger)
	if err != nil {
		return agent.Hooks{}, err
	}
	return r.Agent(), nil
}

// NewRunner is the Runner of ForSources, with the hooks of more (Claude
// Code's --settings) after those of the files.
func NewRunner(home, projectDir string, sources []Source, more Config, env childenv.Policy, logger *slog.Logger) (*Runner, error) {
	conf, err := Load(SourceFiles(home, projectDir, sources)...)
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	for ev, ms := range more {
		conf[ev] = append(conf[ev], ms...)
	}
	return &Runner{
		Config: conf, Dir: projectDir, Logger: logger,
		Environ: env.Environ(os.Environ(), map[string]string{"CLAUDE_PROJECT_DIR": projectDir}),
	}, nil
}
