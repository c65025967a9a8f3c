package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/permission"
	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// Bounds of a tool's live output.
const (
	shortResultLines = 5
	shortResultBytes = 512
	// tailKeep is how much of the output's end is kept to compute the
	// short result, so that each update costs O(1), not O(output).
	tailKeep = 4096
	// maxStreamedOutput bounds the output streamed as resultChunk events
	// per call; past it only the short result moves, and the whole result
	// arrives at end.
	maxStreamedOutput = 8 << 20
	// shortResultEvery is how much output past maxStreamedOutput moves the
	// short result once.
	shortResultEvery = 64 << 10
)

// runTools runs a response's tool calls: consecutive read-only calls in
// parallel, the others one at a time, in order. It returns the results
// for the model in the calls' order.
func (s *Session) runTools(ctx context.Context, msgID string, calls []toolCall, res *Result) []model.Content {
	results := make([]model.Content, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if t := s.tool(calls[i].name); t != nil && t.Kind() == tool.ReadOnly {
			for j < len(calls) {
				if t := s.tool(calls[j].name); t == nil || t.Kind() != tool.ReadOnly {
					break
				}
				j++
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for k := i; k < j; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, denial := s.execTool(ctx, msgID, calls[k])
				results[k] = r
				if denial != nil {
					mu.Lock()
					res.Denials = append(res.Denials, *denial)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		i = j
	}
	return results
}

func (s *Session) tool(name string) tool.Tool {
	if name == taskToolName { // the Agent tool's older name, which models still use
		name = agentToolName
	}
	for _, t := range s.tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// execTool runs one call and publishes its block's stages.
func (s *Session) execTool(ctx context.Context, msgID string, c toolCall) (model.Content, *Denial) {
	ev := protocol.ToolBlockUpdated{MessageID: msgID, BlockIndex: c.display, ToolID: c.id, Name: c.name}
	fail := func(reason, forModel string) model.Content {
		e := ev
		empty, no := "", false
		e.Stage, e.Parameters, e.Result, e.Success, e.Error = protocol.StageEnd, string(c.input), &empty, &no, reason
		s.publish(e)
		return model.Content{Type: model.ContentToolResult, ID: c.id, Text: forModel, IsError: true}
	}
	t := s.tool(c.name)
	if t == nil {
		msg := fmt.Sprintf("unknown tool %q", c.name)
		return fail(msg, "Error: "+msg), nil
	}
	if !json.Valid(c.input) {
		msg := "the tool's parameters are not valid JSON"
		return fail(msg, "Error: "+msg), nil
	}
	ev.Parameters = string(c.input)
	ev.CompactParams = t.Compact(c.input)

	allowed, reason, input := s.permit(ctx, msgID, c, t, ev.CompactParams)
	switch {
	case abortCause(ctx) != nil:
		return fail(ErrAborted.Error(), interruptedPrompt), nil
	case !allowed:
		d := &Denial{ToolID: c.id, Name: c.name, Input: string(c.input)}
		return fail(reason, reason), d
	}
	if input != nil && json.Valid(input) { // a hook changed the input
		c.input = input
		ev.Parameters = string(input)
		ev.CompactParams = t.Compact(input)
	}
	// Read now, not when permission was asked: the user may have changed
	// the file while the question was open, and the diff shown from here
	// on (and stored) is against what the call replaces.
	ev.OldText = s.replaced(ctx, t, c.input)

	running := ev
	running.Stage = protocol.StageRunning
	s.publish(running)
	out := &toolOutput{s: s, ev: running}
	out.ev.OldText = "" // a whole value that running carried already
	r, err := t.Run(tool.WithCallID(ctx, c.id), &s.toolEnv, c.input, out)
	out.flush()

	end := ev
	end.Stage = protocol.StageEnd
	success := err == nil && !r.IsError
	if success && r.EndsRun && abortCause(ctx) == nil {
		s.mu.Lock()
		s.ending = true
		s.mu.Unlock()
	}
	content := r.Content
	switch {
	case abortCause(ctx) != nil:
		success = false
		end.Error = ErrAborted.Error()
	case err != nil:
		end.Error = err.Error()
		if content == "" {
			content = "Error: " + err.Error()
		}
	case r.IsError:
		end.Error = firstLine(content, 200)
	}
	content = strings.ToValidUTF8(content, "\uFFFD")
	forModel := content
	if abortCause(ctx) != nil {
		forModel = strings.TrimSpace(content + "\n" + interruptedPrompt)
	}
	// What PostToolUse hooks say joins the result, for the model and in
	// every face.
	if note := postToolUseNote(s.postToolUse(ctx, c, forModel, !success)); note != "" {
		content = joinNote(content, note)
		forModel = joinNote(forModel, note)
	}
	end.Result = &content
	end.Success = &success
	if success {
		end.File = r.File
	}
	end.ShortResult = r.Summary
	if end.ShortResult == "" {
		end.ShortResult = tools.ShortResult(content, shortResultLines, shortResultBytes)
	}
	s.publish(end)
	return model.Content{Type: model.ContentToolResult, ID: c.id, Text: forModel, IsError: !success}, nil
}

// maxOldText bounds the old text a call that replaces a file carries in
// its events (permission request, running, end): a larger file is shown by
// its new content only.
const maxOldText = 128 << 10

// replaced is the text a call of t with input would replace, when t is a
// tool.Replacer and the text is within maxOldText ("" otherwise).
func (s *Session) replaced(ctx context.Context, t tool.Tool, input json.RawMessage) string {
	r, ok := t.(tool.Replacer)
	if !ok {
		return ""
	}
	text, ok := r.Replaced(ctx, &s.toolEnv, input, maxOldText)
	if !ok {
		return ""
	}
	return strings.ToValidUTF8(text, "\uFFFD")
}

// permit decides whether a call may run: the PreToolUse hook, then the
// mode, asking whoever is attached when the mode says so. It returns false
// and a reason for the model when not, and the input a hook replaced.
func (s *Session) permit(ctx context.Context, msgID string, c toolCall, t tool.Tool, compact string) (bool, string, json.RawMessage) {
	pre := s.preToolUse(ctx, c)
	switch pre.Decision {
	case protocol.DecisionAllow:
		return true, "", pre.Input
	case protocol.DecisionDeny:
		return false, denyReason(pre.Reason, c.name), nil
	}
	key := permission.AlwaysKey(t, c.input)
	s.mu.Lock()
	mode := s.mode
	always := s.always[key]
	s.mu.Unlock()
	d := permission.Decide(mode, t, c.input, &s.toolEnv)
	switch {
	case d.Action == permission.Allow && pre.Decision == VerdictAsk:
	case d.Action == permission.Allow || (d.Action == permission.Ask && always):
		return true, "", nil
	case d.Action == permission.Deny:
		return false, d.Reason, nil
	}
	req := protocol.PermissionRequest{
		RequestID: s.opts.NewID(), MessageID: msgID, BlockIndex: c.display, ToolID: c.id,
		Name: c.name, Parameters: string(c.input), CompactParams: compact, Reason: d.Reason,
		OldText: s.replaced(ctx, t, c.input),
	}
	w := &waiter{answer: make(chan protocol.Decision, 1)}
	s.mu.Lock()
	// Publish under s.mu so that a face answering the event at once finds
	// its waiter (AnswerPermission takes s.mu).
	w.req = s.publish(req).(protocol.PermissionRequest)
	s.waiters[req.RequestID] = w
	s.mu.Unlock()
	s.notify(w.req)
	var decision protocol.Decision
	var verdict Verdict
	if ask := s.opts.Hooks.Ask; ask != nil {
		verdict = ask(ctx, w.req)
		decision = verdict.Decision
		s.mu.Lock()
		_, pending := s.waiters[req.RequestID]
		delete(s.waiters, req.RequestID)
		s.mu.Unlock()
		if !pending { // a face answered first
			decision, verdict = <-w.answer, Verdict{}
		}
	} else if s.opts.Approve != nil {
		decision = s.opts.Approve(ctx, w.req)
		s.mu.Lock()
		_, pending := s.waiters[req.RequestID]
		delete(s.waiters, req.RequestID)
		s.mu.Unlock()
		if !pending { // a face answered first
			decision = <-w.answer
		}
	} else {
		select {
		case decision = <-w.answer:
		case <-ctx.Done():
			s.mu.Lock()
			delete(s.waiters, req.RequestID)
			s.mu.Unlock()
			decision = protocol.DecisionDeny
		}
	}
	s.publish(protocol.PermissionResolved{RequestID: req.RequestID, Decision: decision})
	switch decision {
	case protocol.DecisionAllowAlways:
		s.mu.Lock()
		s.always[key] = true
		s.mu.Unlock()
		return true, "", verdict.Input
	case protocol.DecisionAllow:
		return true, "", verdict.Input
	}
	return false, denyReason(verdict.Reason, c.name), nil
}

func denyReason(reason, name string) string {
	if reason != "" {
		return reason
	}
	return fmt.Sprintf("The user denied permission to use %s. Do not retry it; ask the user how to proceed.", name)
}

// toolOutput publishes a running tool's output as resultChunk deltas with
// the current short result. It never splits a UTF-8 character across
// events.
type toolOutput struct {
	s  *Session
	ev protocol.ToolBlockUpdated

	mu        sync.Mutex
	pending   []byte // an incomplete UTF-8 sequence held for the next write
	tail      []byte // the output's last tailKeep bytes
	streamed  int    // bytes sent as resultChunk
	total     int    // bytes of output so far
	lastShort int    // total when the short result last went out
}

func (o *toolOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	buf := append(o.pending, p...)
	cut := completeUTF8(buf)
	o.pending = append([]byte(nil), buf[cut:]...)
	o.emit(buf[:cut])
	return n, nil
}

// flush sends what is held back (an output ending mid-character).
func (o *toolOutput) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) > 0 {
		o.emit(o.pending)
		o.pending = nil
	}
}

func (o *toolOutput) emit(b []byte) {
	if len(b) == 0 {
		return
	}
	chunk := strings.ToValidUTF8(string(b), "\uFFFD")
	o.tail = append(o.tail, chunk...)
	if len(o.tail) > 2*tailKeep {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-tailKeep:]...)
	}
	o.total += len(chunk)
	ev := o.ev
	switch {
	case o.streamed < maxStreamedOutput:
		ev.ResultChunk = chunk
		o.streamed += len(chunk)
	case o.total-o.lastShort < shortResultEvery:
		// Past the streamed bound, the short result moves only every so
		// many bytes: endless output must not mean endless events.
		return
	}
	o.lastShort = o.total
	ev.ShortResult = tools.ShortResult(string(o.tail), shortResultLines, shortResultBytes)
	if ev.ResultChunk == "" && ev.ShortResult == "" {
		return
	}
	o.s.publish(ev)
}

// completeUTF8 returns the length of b's longest prefix that does not end
// inside a UTF-8 sequence.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// takeEnding reports, and clears, that a tool call ended the run
// (tool.Result.EndsRun).
func (s *Session) takeEnding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ending
	s.ending = false
	return e
}
