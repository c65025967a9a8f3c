package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// Prompts the agent adds to the model's context (never displayed).
const (
	continuePrompt    = "Your response was cut off because it exceeded the output token limit. Continue exactly where you left off, without repeating anything."
	interruptedPrompt = "[Request interrupted by user]"
)

// runMessage runs one user message: model responses and tool calls until a
// response ends without tool use, the run is aborted or a limit is hit.
func (s *Session) runMessage(j *job) (res Result) {
	ctx := j.ctx
	res = Result{MessageID: j.id}
	// The final answer so far: the text of responses cut by max_tokens
	// that the next response continues, then the message of the response
	// under way ("" once a tool round has ended: the answer is still to
	// come).
	var cut strings.Builder
	answerMsg := ""
	defer func() {
		// What the run's subagents did is part of its result.
		for _, r := range s.takeSubagentRuns() {
			res.Subagents = append(res.Subagents, r)
			res.CostUSD += r.CostUSD
			res.Denials = append(res.Denials, r.Denials...)
		}
	}()
	defer func() {
		if res.Err != nil {
			// A failed or aborted run reports how far its answer got,
			// never an earlier round's text nor the error (that is Err).
			res.Text = cut.String() + s.messageText(answerMsg)
		}
	}()
	_ = s.takeHalt() // a halt asked for after the last run ended is stale
	_ = s.takeEnding()
	if err := s.addPrompt(ctx, j); err != nil {
		res.Err = err
		return res
	}

	continuations := 0
	overflowCompacted := false
	stopHookActive := false
	for {
		if err := abortCause(ctx); err != nil {
			res.Err = err
			return res
		}
		if res.Turns >= s.opts.MaxTurns {
			res.Err = fmt.Errorf("%w (%d)", ErrMaxTurns, s.opts.MaxTurns)
			s.noteOnLast(res.Err.Error())
			return res
		}
		// A paused turn (pause_turn) goes back to the server as it is, to
		// be continued: folding the context now would cut it.
		if res.StopReason != model.StopPauseTurn {
			if err := s.maybeAutoCompact(ctx); err != nil && abortCause(ctx) != nil {
				res.Err = abortCause(ctx)
				return res
			}
		}
		out := s.respond(ctx, &res, !overflowCompacted)
		answerMsg = out.att.msgID
		if out.err != nil {
			if errors.Is(out.err, model.ErrContextOverflow) && !overflowCompacted && !out.aborted {
				// The request did not fit: fold the context and try again.
				overflowCompacted = true
				s.fire(ctx, EventPreCompact, "auto", map[string]any{"trigger": "auto", "custom_instructions": ""})
				err := s.compact(ctx)
				if err == nil {
					continue
				}
				if c := abortCause(ctx); c != nil {
					res.Err = c
					return res
				}
				res.Err = fmt.Errorf("%w; compacting the session failed too: %v", out.err, err)
				s.noteOn(newAttempt(s), res.Err.Error())
				return res
			}
			res.Err = out.err
			return res
		}
		res.Turns++
		res.StopReason = out.stopReason
		calls := out.att.toolCalls()
		switch {
		case len(calls) > 0 && out.stopReason != model.StopMaxTokens:
			s.recordResponse(out)
			s.recordToolResults(out.att.msgID, s.runTools(ctx, out.att.msgID, calls, &res))
			cut.Reset()
			answerMsg = ""
			if err := abortCause(ctx); err != nil {
				res.Err = err
				return res
			}
			if err := s.takeHalt(); err != nil {
				res.Err = err
				s.noteOnLast(err.Error())
				return res
			}
			if s.takeEnding() {
				return res // answered through a tool: a success, with no text
			}
			s.steer(j)
		case out.stopReason == model.StopMaxTokens || out.stopReason == model.StopContextLimit:
			continuations++
			s.endRound(out)
			if continuations > s.opts.MaxContinuations {
				res.Err = fmt.Errorf("%w (%d continuations); ask for a shorter answer or raise --max-tokens", ErrMaxTokens, s.opts.MaxContinuations)
				s.noteOn(out.att, res.Err.Error())
				return res
			}
			// The continuation goes on mid-sentence: the answer is the cut
			// text and what follows, joined as they are.
			cut.WriteString(s.messageText(out.att.msgID))
			answerMsg = ""
			if res.Continued == "" {
				res.Continued = out.stopReason
			}
			if out.stopReason == model.StopContextLimit {
				if err := s.compact(ctx); err != nil {
					res.Err = err
					return res
				}
			}
			s.appendContext(model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: continuePrompt}}})
		case out.stopReason == model.StopPauseTurn:
			// A server-side tool paused a long turn: send it back as it is
			// and the model continues.
			s.endRound(out)
		default:
			s.endRound(out)
			if reason, again := s.stopHook(ctx, stopHookActive); again {
				// A Stop hook wants more: its reason is the model's next
				// prompt, and the answer is what follows.
				stopHookActive = true
				s.appendContext(model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: reason}}})
				cut.Reset()
				answerMsg = ""
				continue
			}
			res.Text = cut.String() + s.messageText(out.att.msgID)
			return res
		}
	}
}

// responseOutcome is what one model response left.
type responseOutcome struct {
	att        *attempt
	resp       *model.Response
	stopReason string
	err        error
	aborted    bool
}

// respond streams one model response into the session, retrying as the
// stream options say. When canCompact, a context overflow leaves no trace
// in the display: the caller compacts and asks again.
func (s *Session) respond(ctx context.Context, res *Result, canCompact bool) responseOutcome {
	req := s.request()
	opts := s.opts.Stream
	if res.FallbackModel != "" {
		// The run goes on with the model it fell back to, and the ones
		// after it.
		req.Model = res.FallbackModel
		opts.FallbackModels = opts.FallbackModels[slices.Index(opts.FallbackModels, res.FallbackModel)+1:]
	}
	att := newAttempt(s)
	start := time.Now()
	var err error
	for p, perr := range model.Stream(ctx, s.opts.Provider, req, opts) {
		if perr != nil {
			err = perr
			break
		}
		if p.Type == model.PartRetry && p.Retry != nil && p.Retry.Model != "" {
			res.FallbackModel, req.Model = p.Retry.Model, p.Retry.Model
		}
		s.publishPart(p)
		att.handle(p)
		// A subscriber that must not fall behind (a host on stdio that
		// stopped reading) holds the stream here, before more is read;
		// a subagent's stream reaches its parents' subscribers too.
		for o := s; o != nil; o = o.parent {
			o.bus.waitRoom(ctx)
		}
	}
	res.APIDuration += time.Since(start)
	aborted := false
	if cause := abortCause(ctx); cause != nil {
		err, aborted = cause, true
	}
	if canCompact && !aborted && errors.Is(err, model.ErrContextOverflow) {
		if att.msgID != "" {
			s.publish(protocol.AssistantMessageDiscarded{MessageID: att.msgID, Reason: "the context is too long; compacting"})
		}
		return responseOutcome{att: att, err: err}
	}
	att.finish(err, aborted)
	u := att.totalUsage()
	res.Usage = res.Usage.Add(u)
	res.CostUSD += s.cost(req.Model, u)
	out := responseOutcome{att: att, err: err, aborted: aborted, stopReason: att.stopReason}
	if err != nil {
		s.interrupted(att, aborted)
		return out
	}
	out.resp = att.acc.Response()
	if len(att.toolCalls()) > 0 && (out.stopReason == model.StopEndTurn || out.stopReason == "") {
		// Some compatible servers end a tool-calling response with "stop".
		out.stopReason = model.StopToolUse
		att.stopReason = model.StopToolUse
	}
	s.mu.Lock()
	s.ctxTokens = att.contextTokens(u)
	s.mu.Unlock()
	return out
}

// abortCause returns why ctx was cancelled, as an error wrapping
// ErrAborted, or nil.
func abortCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrAborted) {
		return cause
	}
	return fmt.Errorf("%w: %v", ErrAborted, cause)
}

// endRound records a finished response that calls no tools.
func (s *Session) endRound(out responseOutcome) { s.recordResponse(out) }

// recordResponse records a finished response in the model's context and
// the session file. A response that calls tools is recorded before they
// run: a crash while they run leaves the calls recorded, and a restore
// answers them as interrupted (repairContext).
func (s *Session) recordResponse(out responseOutcome) {
	var more []record
	if content := assistantContent(out.resp, out.stopReason); len(content) > 0 {
		m := model.Message{Role: model.RoleAssistant, Content: content}
		s.mu.Lock()
		s.ctxMsgs = append(s.ctxMsgs, m)
		s.mu.Unlock()
		more = append(more, s.contextRecord(out.att.msgID, []model.Message{m}))
	}
	s.persistMessage(out.att.msgID, nil, more...)
}

// recordToolResults records the results of a response's tool calls.
func (s *Session) recordToolResults(msgID string, results []model.Content) {
	var more []record
	if len(results) > 0 {
		m := model.Message{Role: model.RoleUser, Content: results}
		s.mu.Lock()
		s.ctxMsgs = append(s.ctxMsgs, m)
		s.mu.Unlock()
		more = append(more, s.contextRecord(msgID, []model.Message{m}))
	}
	s.persistMessage(msgID, nil, more...)
}

// assistantContent is what of a response goes back to the model: empty
// text dropped (unless it carries a signature the server wants back), and
// after max_tokens no tool call (it has no result).
func assistantContent(resp *model.Response, stopReason string) []model.Content {
	if resp == nil {
		return nil
	}
	var out []model.Content
	for _, c := range resp.Content {
		switch {
		case c.Type == model.ContentText && c.Text == "" && len(c.Citations) == 0 && c.Signature == "":
		case c.Type == model.ContentToolUse && (stopReason == model.StopMaxTokens || stopReason == model.StopContextLimit):
		default:
			out = append(out, c)
		}
	}
	return out
}

// interrupted records in the model's context what a failed or aborted
// response produced, so that the next message knows.
func (s *Session) interrupted(att *attempt, aborted bool) {
	var content []model.Content
	if resp := att.acc.Response(); resp != nil {
		for _, c := range resp.Content {
			if c.Type == model.ContentText && c.Text != "" {
				content = append(content, model.Content{Type: model.ContentText, Text: c.Text})
			}
		}
	}
	var ctxRecs []model.Message
	if len(content) > 0 {
		ctxRecs = append(ctxRecs, model.Message{Role: model.RoleAssistant, Content: content})
	}
	if aborted {
		ctxRecs = append(ctxRecs, model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: interruptedPrompt}}})
	}
	s.mu.Lock()
	s.ctxMsgs = append(s.ctxMsgs, ctxRecs...)
	s.mu.Unlock()
	var more []record
	if len(ctxRecs) > 0 {
		more = append(more, s.contextRecord(att.msgID, ctxRecs))
	}
	s.persistMessage(att.msgID, nil, more...)
}

// steer delivers the messages sent while j runs at its next model request,
// after the tool results just recorded: the model reads them before it goes
// on, as a person would interject. Only messages at the head of the queue
// join (a bang or a compaction queued before them keeps its place), and
// each is published as userMessageAdded as it is sent; until then it was
// queued. Their handles are done when j's run ends, with its result.
func (s *Session) steer(j *job) {
	for {
		s.mu.Lock()
		if len(s.queued) == 0 || s.queued[0].kind != jobMessage || s.queued[0].ctx.Err() != nil {
			s.mu.Unlock()
			return
		}
		m := s.queued[0]
		s.queued = s.queued[1:]
		s.queueChangedLocked()
		j.steered = append(j.steered, m)
		s.mu.Unlock()
		// A steered message a hook refuses is shown refused; the run goes
		// on without it.
		_ = s.addPrompt(j.ctx, m)
	}
}

// addPrompt adds a user message, with what the UserPromptSubmit (and a
// pending SessionStart) hooks add for the model, or shows it refused and
// returns why when a hook refuses it.
func (s *Session) addPrompt(ctx context.Context, j *job) error {
	msg, ctxMsg := s.userMessage(j)
	extra, refused := s.beforePrompt(ctx, j.text)
	if refused != nil {
		s.addRefusedMessage(msg, refused.Error())
		return refused
	}
	for _, t := range extra {
		ctxMsg.Content = append(ctxMsg.Content, model.Content{Type: model.ContentText, Text: t})
	}
	s.addUserMessage(msg, ctxMsg)
	return nil
}

// userMessage is a message job as the display shows it and as the model
// gets it: its text, and its images (in the display, a line naming each).
func (s *Session) userMessage(j *job) (protocol.Message, model.Message) {
	display := j.text
	content := []model.Content{{Type: model.ContentText, Text: j.text}}
	for _, img := range j.images {
		if display != "" {
			display += "\n"
		}
		display += fmt.Sprintf("[image: %s, %s]", img.MediaType, sizeOf(len(img.Data)))
		content = append(content, model.Content{Type: model.ContentImage, MediaType: img.MediaType, Data: base64.StdEncoding.EncodeToString(img.Data)})
	}
	return protocol.Message{
		ID: j.id, Role: protocol.RoleUser, CreatedAt: s.now(),
		Blocks: []protocol.Block{{Type: protocol.BlockText, Content: display}},
	}, model.Message{Role: model.RoleUser, Content: content}
}

func sizeOf(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d KB", (n+1023)/1024)
}

// addUserMessage publishes a user message and adds it to the context.
func (s *Session) addUserMessage(msg protocol.Message, ctxMsg model.Message) {
	s.mu.Lock()
	mark := ctxMark{Epoch: s.epoch, Len: len(s.ctxMsgs)}
	s.marks[msg.ID] = mark
	s.ctxMsgs = append(s.ctxMsgs, ctxMsg)
	title := !s.titled
	s.titled = true
	s.mu.Unlock()
	s.publish(protocol.UserMessageAdded{Message: msg})
	recs := []record{}
	if title {
		recs = append(recs, record{Type: recTitle, Time: s.now(), Title: s.titleOf(msg)})
	}
	recs = append(recs,
		record{Type: recMessage, Time: s.now(), Message: &msg, Mark: &mark},
		record{Type: recContext, Time: s.now(), Context: []model.Message{ctxMsg}})
	s.persist(recs...)
}

func (s *Session) appendContext(m model.Message) {
	s.mu.Lock()
	s.ctxMsgs = append(s.ctxMsgs, m)
	s.mu.Unlock()
	s.persist(record{Type: recContext, Time: s.now(), Context: []model.Message{m}})
}

// message returns a copy of the last message with the given id.
func (s *Session) message(id string) (protocol.Message, bool) {
	if id == "" {
		return protocol.Message{}, false
	}
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	i := s.bus.list.Index(id)
	if i < 0 {
		return protocol.Message{}, false
	}
	return s.bus.list.At(i), true
}

func (s *Session) messageText(id string) string {
	m, _ := s.message(id)
	return m.Text()
}

// noteOn appends an error block to the attempt's message.
func (s *Session) noteOn(att *attempt, text string) {
	att.ensureMessage()
	s.publish(protocol.ErrorBlockAdded{MessageID: att.msgID, BlockIndex: att.next, Error: text})
	att.next++
}

// noteOnLast appends an error block to the last message.
func (s *Session) noteOnLast(text string) {
	s.bus.mu.Lock()
	n := s.bus.list.Len()
	var m protocol.Message
	if n > 0 {
		m = s.bus.list.At(n - 1)
	}
	s.bus.mu.Unlock()
	if n == 0 {
		return
	}
	s.publish(protocol.ErrorBlockAdded{MessageID: m.ID, BlockIndex: len(m.Blocks), Error: text})
}

// request builds the next model request from the context.
func (s *Session) request() *model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs := make([]model.Message, len(s.ctxMsgs))
	copy(msgs, s.ctxMsgs)
	req := &model.Request{
		Model:          s.model,
		System:         s.systemPrompt(),
		Messages:       msgs,
		MaxTokens:      s.opts.MaxTokens,
		ThinkingBudget: s.opts.ThinkingBudget,
		// Adaptive thinking stands aside while a budget is set.
		AdaptiveThinking: s.opts.AdaptiveThinking && s.opts.ThinkingBudget == 0,
		Effort:           s.opts.Effort,
	}
	for _, t := range s.tools {
		req.Tools = append(req.Tools, model.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.Schema()})
	}
	return req
}

// titleOf is the session's title: Options.Title, or the start of its
// first message m.
func (s *Session) titleOf(m protocol.Message) string {
	if s.opts.Title != "" {
		return s.opts.Title
	}
	t := m.Text()
	if r := []rune(t); len(r) > 80 {
		t = string(r[:80]) + "…"
	}
	return t
}
