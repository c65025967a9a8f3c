package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/protocol"
)

// Hooks let the program that embeds a session take part in its tool calls:
// decide a call before the permission mode does, answer the calls the mode
// asks about with more than yes or no, and hear how each call ended. A nil
// hook is not called. Hooks run on the goroutine of the call (calls of
// read-only tools may run side by side), with the run's context; a hook
// must return once that context is done.
type Hooks struct {
	// PreToolUse is asked about each call before the permission mode. A
	// Verdict without Decision leaves the call to the mode; "ask" makes
	// the mode ask even where it would allow.
	PreToolUse func(ctx context.Context, call ToolCall) Verdict
	// Ask answers the calls that need approval, in place of
	// Options.Approve; the request is published as with Approve, so faces
	// show it while Ask decides.
	Ask func(ctx context.Context, req protocol.PermissionRequest) Verdict
	// PostToolUse is told each call that ran, with what the model gets;
	// a Block's Reason (and any Context) is added to the call's result for
	// the model to see.
	PostToolUse func(ctx context.Context, call ToolCall, result string, isError bool) HookResult
	// Event is told the session's other events (HookEvent); what it
	// answers matters for UserPromptSubmit, Stop and SessionStart.
	Event func(ctx context.Context, ev HookEvent) HookResult
}

// HookEventName names a session event as Claude Code's hooks do.
type HookEventName string

// The events Hooks.Event hears, and when:
//   - UserPromptSubmit: a user message, before the model sees it. A Block
//     refuses it: it is shown with the Reason and never reaches the model.
//     Context joins the message for the model.
//   - Stop: a run is about to end with its answer. A Block sends Reason to
//     the model as the next prompt and the run goes on (bounded by
//     MaxTurns); "stop_hook_active" is true when a Stop hook already did.
//   - SessionStart: before the first message of a session started
//     ("startup"), resumed ("resume"), cleared ("clear") or compacted
//     ("compact"); Context joins that message for the model.
//   - SessionEnd: the session is cleared ("clear") or closed ("other").
//   - PreCompact: before the context is compacted ("manual" or "auto").
//   - Notification: a permission request waits for an answer.
const (
	EventUserPromptSubmit HookEventName = "UserPromptSubmit"
	EventStop             HookEventName = "Stop"
	EventSessionStart     HookEventName = "SessionStart"
	EventSessionEnd       HookEventName = "SessionEnd"
	EventPreCompact       HookEventName = "PreCompact"
	EventNotification     HookEventName = "Notification"
	// SubagentStop is Stop for a subagent's run ("agent_id", "agent_type"
	// and "stop_hook_active"): a Block sends the subagent back to work.
	// A subagent fires no SessionStart, SessionEnd nor UserPromptSubmit.
	EventSubagentStop HookEventName = "SubagentStop"
)

// HookEvent is a session event as hooks hear it.
type HookEvent struct {
	Name           HookEventName
	SessionID      string
	TranscriptPath string
	// Match is what hook matchers compare: SessionStart's source,
	// SessionEnd's reason, PreCompact's trigger, Notification's type.
	Match string
	// Fields are the event's own fields, named as in Claude Code's hook
	// input (prompt, stop_hook_active, source, reason, trigger, message,
	// notification_type).
	Fields map[string]any
}

// HookResult is what hooks answer to an event or a finished call.
type HookResult struct {
	// Block and Reason: see the events (HookEventName) and PostToolUse.
	Block  bool
	Reason string
	// Context is text added to the model's context.
	Context string
	// Halt ends the run after the current step (a hook's "continue":
	// false), with StopReason told to the user.
	Halt       bool
	StopReason string
}

// ErrHookStopped: a hook ended the run ("continue": false).
var ErrHookStopped = errors.New("stopped by a hook")

// ErrPromptBlocked: a UserPromptSubmit hook refused the message.
var ErrPromptBlocked = errors.New("the prompt was blocked by a UserPromptSubmit hook")

func (r *HookResult) merge(o HookResult) {
	r.Block = r.Block || o.Block
	r.Reason = joinLines(r.Reason, o.Reason)
	r.Context = joinLines(r.Context, o.Context)
	r.Halt = r.Halt || o.Halt
	r.StopReason = joinLines(r.StopReason, o.StopReason)
}

func joinLines(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// verdictRank orders PreToolUse decisions: the strictest of several hooks
// wins.
var verdictRank = map[protocol.Decision]int{"": 0, protocol.DecisionAllow: 1, VerdictAsk: 2, protocol.DecisionDeny: 3}

// JoinHooks combines several sources of hooks (the user's command hooks,
// an SDK host's callbacks): every hook of every source runs, a block or
// denial from any of them wins, and the strictest PreToolUse decision
// stands. Ask, which answers a request, is the last source's that has one.
func JoinHooks(sources ...Hooks) Hooks {
	var pre, post, event []Hooks
	var joined Hooks
	for _, h := range sources {
		if h.PreToolUse != nil {
			pre = append(pre, h)
		}
		if h.PostToolUse != nil {
			post = append(post, h)
		}
		if h.Event != nil {
			event = append(event, h)
		}
		if h.Ask != nil {
			joined.Ask = h.Ask
		}
	}
	if len(pre) > 0 {
		joined.PreToolUse = func(ctx context.Context, call ToolCall) Verdict {
			var v Verdict
			for _, h := range pre {
				o := h.PreToolUse(ctx, call)
				switch {
				case verdictRank[o.Decision] > verdictRank[v.Decision]:
					v.Decision, v.Reason, v.Input = o.Decision, o.Reason, o.Input
				case o.Decision == v.Decision:
					v.Reason = joinLines(v.Reason, o.Reason)
					if o.Input != nil {
						v.Input = o.Input
					}
				}
				v.Halt = v.Halt || o.Halt
				v.StopReason = joinLines(v.StopReason, o.StopReason)
			}
			if v.Decision != protocol.DecisionAllow {
				v.Input = nil
			}
			return v
		}
	}
	if len(post) > 0 {
		joined.PostToolUse = func(ctx context.Context, call ToolCall, result string, isError bool) HookResult {
			var r HookResult
			for _, h := range post {
				r.merge(h.PostToolUse(ctx, call, result, isError))
			}
			return r
		}
	}
	if len(event) > 0 {
		joined.Event = func(ctx context.Context, ev HookEvent) HookResult {
			var r HookResult
			for _, h := range event {
				r.merge(h.Event(ctx, ev))
			}
			return r
		}
	}
	return joined
}

// ToolCall is a tool call as hooks see it.
type ToolCall struct {
	ID, Name string
	Input    json.RawMessage
	// SessionID and TranscriptPath (the session file, when there is one)
	// name the session the call is in.
	SessionID, TranscriptPath string
}

// VerdictAsk is a PreToolUse decision: ask even where the mode allows.
const VerdictAsk protocol.Decision = "ask"

// Verdict is a hook's decision on a call.
type Verdict struct {
	// Decision is protocol.DecisionAllow, protocol.DecisionDeny,
	// VerdictAsk, or "" for no opinion.
	Decision protocol.Decision
	// Reason, on a denial, is what the model is told as the call's result
	// (a default sentence when empty).
	Reason string
	// Input, on an allow, replaces the call's input when set.
	Input json.RawMessage
	// Halt ends the run after this round of calls ("continue": false),
	// with StopReason told to the user.
	Halt       bool
	StopReason string
}

func (s *Session) hookCall(c toolCall) ToolCall {
	return ToolCall{ID: c.id, Name: c.name, Input: c.input, SessionID: s.hookID, TranscriptPath: s.transcript}
}

func (s *Session) preToolUse(ctx context.Context, c toolCall) Verdict {
	if s.opts.Hooks.PreToolUse == nil {
		return Verdict{}
	}
	v := s.opts.Hooks.PreToolUse(ctx, s.hookCall(c))
	if v.Halt {
		s.halt(v.StopReason)
	}
	return v
}

func (s *Session) postToolUse(ctx context.Context, c toolCall, result string, isError bool) HookResult {
	if s.opts.Hooks.PostToolUse == nil {
		return HookResult{}
	}
	r := s.opts.Hooks.PostToolUse(ctx, s.hookCall(c), result, isError)
	if r.Halt {
		s.halt(r.StopReason)
	}
	return r
}

// fire tells the Event hook of ev and returns its answer.
func (s *Session) fire(ctx context.Context, name HookEventName, match string, fields map[string]any) HookResult {
	if s.opts.Hooks.Event == nil {
		return HookResult{}
	}
	return s.opts.Hooks.Event(ctx, HookEvent{Name: name, SessionID: s.hookID, TranscriptPath: s.transcript, Match: match, Fields: fields})
}

// halt asks the run under way to end after its current step.
func (s *Session) halt(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halted = true
	s.haltReason = joinLines(s.haltReason, reason)
}

// takeHalt returns, and clears, the error of a halt asked for by a hook.
func (s *Session) takeHalt() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.halted {
		return nil
	}
	err := ErrHookStopped
	if s.haltReason != "" {
		err = fmt.Errorf("%w: %s", ErrHookStopped, s.haltReason)
	}
	s.halted, s.haltReason = false, ""
	return err
}

// beforePrompt fires the SessionStart still pending and UserPromptSubmit
// for a user message. It returns the text they add to the message for the
// model, or the error saying why a hook refused the message.
func (s *Session) beforePrompt(ctx context.Context, prompt string) (extra []string, refused error) {
	s.mu.Lock()
	source := s.startSource
	s.startSource = ""
	s.mu.Unlock()
	if source != "" {
		if r := s.fire(ctx, EventSessionStart, source, map[string]any{"source": source}); r.Context != "" {
			extra = append(extra, r.Context)
		}
	}
	r := s.fire(ctx, EventUserPromptSubmit, "", map[string]any{"prompt": prompt})
	switch {
	case r.Block:
		if r.Reason == "" {
			return nil, ErrPromptBlocked
		}
		return nil, fmt.Errorf("%w: %s", ErrPromptBlocked, r.Reason)
	case r.Halt:
		if r.StopReason == "" {
			return nil, ErrHookStopped
		}
		return nil, fmt.Errorf("%w: %s", ErrHookStopped, r.StopReason)
	}
	if r.Context != "" {
		extra = append(extra, r.Context)
	}
	return extra, nil
}

// addRefusedMessage shows a user message that a hook refused, with why,
// and records it without adding it to the model's context (now or when
// the session is resumed).
func (s *Session) addRefusedMessage(msg protocol.Message, why string) {
	msg.Blocks = append(msg.Blocks, protocol.Block{Type: protocol.BlockError, Content: why})
	s.mu.Lock()
	mark := ctxMark{Epoch: s.epoch, Len: len(s.ctxMsgs)}
	s.marks[msg.ID] = mark
	s.mu.Unlock()
	s.publish(protocol.UserMessageAdded{Message: msg})
	s.persist(record{Type: recMessage, Time: s.now(), Message: &msg, Mark: &mark})
}

// stopHook fires Stop as a run is about to end; again says the model is to
// go on with reason as its prompt.
func (s *Session) stopHook(ctx context.Context, active bool) (reason string, again bool) {
	r := s.fire(ctx, EventStop, "", map[string]any{"stop_hook_active": active})
	if !r.Block || r.Halt || abortCause(ctx) != nil {
		return "", false
	}
	if r.Reason == "" {
		r.Reason = "A Stop hook asked you to continue."
	}
	return r.Reason, true
}

// notify fires Notification for a permission request, beside the wait
// for its answer (a hook that shows a desktop notice must not delay it).
func (s *Session) notify(req protocol.PermissionRequest) {
	if s.opts.Hooks.Event == nil {
		return
	}
	s.notifying.Add(1)
	go func() {
		defer s.notifying.Done()
		s.fire(s.hooksCtx, EventNotification, "permission_prompt", map[string]any{
			"message":           "sluice needs your permission to use " + req.Name,
			"notification_type": "permission_prompt",
		})
	}()
}

// postToolUseNote is what PostToolUse hooks said, as it joins the result.
func postToolUseNote(r HookResult) string {
	var note string
	if r.Block && r.Reason != "" {
		note = "PostToolUse hook feedback:\n" + r.Reason
	}
	if r.Context != "" {
		note = joinNote(note, r.Context)
	}
	return note
}

// joinNote adds a paragraph to a text that may be empty.
func joinNote(text, note string) string {
	if text == "" {
		return note
	}
	return text + "\n\n" + note
}
