package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// ErrNothingToCompact: the session has no context to fold.
var ErrNothingToCompact = errors.New("nothing to compact yet")

const (
	compactPrompt = `Summarize this conversation so that it can continue without the earlier messages. Keep: what the user asked for and still wants, decisions made, files read or changed (with paths), commands run and their outcomes, errors met and how they were handled, and the work still to do. Be concise but complete; write the summary only, and do not call any tool.`
	summaryIntro  = "This session is being continued from an earlier conversation whose context was compacted. Summary of the earlier conversation:\n\n"
	// keepShare is the largest share of the context window that the
	// recent round kept verbatim beside the summary may take.
	keepShare = 0.25
)

// compact folds the model's context into a summary: the summary message is
// appended to the display list (compactBlockAdded); the context becomes the
// summary plus the last round when it is small.
func (s *Session) compact(ctx context.Context) error {
	s.mu.Lock()
	msgs := append([]model.Message(nil), s.ctxMsgs...)
	s.mu.Unlock()
	if len(msgs) == 0 {
		return ErrNothingToCompact
	}
	// Every face shows the compaction while it runs, from the view state:
	// since when, and how long the summary has grown.
	started := s.now()
	s.publish(protocol.CompactionUpdated{Stage: protocol.StageStart, StartedAt: started})
	defer s.publish(protocol.CompactionUpdated{Stage: protocol.StageEnd})
	// A context too long to summarise loses its oldest rounds until the
	// summary request fits.
	var text string
	var err error
	for from := 0; ; {
		text, err = s.summarize(ctx, msgs[from:], started)
		if !errors.Is(err, model.ErrContextOverflow) {
			break
		}
		next := dropOldest(msgs, from)
		if next <= from || next >= len(msgs) {
			break
		}
		from = next
	}
	if err != nil {
		return err
	}

	keep := keepFrom(msgs, s.opts.ContextWindow)
	folded := foldContext(text, msgs[keep:])
	msg := protocol.Message{ID: s.opts.NewID(), Role: protocol.RoleAssistant, CreatedAt: s.now(),
		Blocks: []protocol.Block{{Type: protocol.BlockCompact, Content: text}}}
	s.mu.Lock()
	s.ctxMsgs = folded
	s.epoch++
	s.ctxTokens = estimateTokens(folded)
	s.startSource = "compact"
	s.mu.Unlock()
	s.publish(protocol.CompactBlockAdded{Message: msg})
	s.persist(record{Type: recCompact, Time: s.now(), Message: &msg, KeepFrom: keep})
	return nil
}

// summarize asks the model for a summary of msgs, publishing how much of
// it has streamed (compactionUpdated); started is when the compaction
// started.
func (s *Session) summarize(ctx context.Context, msgs []model.Message, started int64) (string, error) {
	req := s.request()
	req.Messages = append(append([]model.Message(nil), msgs...), model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: compactPrompt}}})
	req.ThinkingBudget = 0

	var acc model.Accumulator
	var err error
	for p, perr := range model.Stream(ctx, s.opts.Provider, req, s.opts.Stream) {
		if perr != nil {
			err = perr
			break
		}
		switch p.Type {
		case model.PartRetry:
			acc = model.Accumulator{}
			s.publish(protocol.StreamNotice{Kind: protocol.NoticeRetrying, Attempt: p.Retry.Attempt,
				DelayMs: p.Retry.Delay.Milliseconds(), Cause: errText(p.Retry.Err)})
			// The summary starts again.
			s.publish(protocol.CompactionUpdated{Stage: protocol.StageStart, StartedAt: started})
		case model.PartStalled:
			s.publish(protocol.StreamNotice{Kind: protocol.NoticeStalled, IdleMs: p.Idle.Milliseconds()})
		default:
			acc.Add(p)
			if p.Type == model.PartBlockDelta && p.Delta == model.DeltaText && p.Text != "" {
				s.publish(protocol.CompactionUpdated{Stage: protocol.StageStreaming, Chars: utf8.RuneCountInString(p.Text)})
			}
		}
	}
	if c := abortCause(ctx); c != nil {
		return "", c
	}
	if err != nil {
		return "", fmt.Errorf("compact: %w", err)
	}
	var summary strings.Builder
	if resp := acc.Response(); resp != nil {
		for _, c := range resp.Content {
			if c.Type == model.ContentText {
				summary.WriteString(c.Text)
			}
		}
	}
	text := strings.TrimSpace(summary.String())
	if text == "" {
		return "", errors.New("compact: the model returned an empty summary")
	}
	return text, nil
}

// dropOldest returns where msgs[from:] starts once its oldest quarter is
// dropped, at the start of a round (a user message with text) so that no
// tool result loses its call.
func dropOldest(msgs []model.Message, from int) int {
	target := from + max(1, (len(msgs)-from)/4)
	for i := target; i < len(msgs); i++ {
		if msgs[i].Role == model.RoleUser && hasText(msgs[i]) {
			return i
		}
	}
	return len(msgs)
}

// foldContext is the summary followed by the kept messages. The summary is
// a user message; when the kept part starts with one too, they are merged
// so that roles keep alternating.
func foldContext(summary string, kept []model.Message) []model.Message {
	head := model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: summaryIntro + summary}}}
	if len(kept) > 0 && kept[0].Role == model.RoleUser {
		head.Content = append(head.Content, kept[0].Content...)
		kept = kept[1:]
	}
	return append([]model.Message{head}, kept...)
}

// keepFrom finds where the last round (the last user message with text,
// not tool results) starts, if it is small enough to keep verbatim.
func keepFrom(msgs []model.Message, window int) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role != model.RoleUser || !hasText(msgs[i]) {
			continue
		}
		if float64(estimateTokens(msgs[i:])) <= keepShare*float64(window) {
			return i
		}
		break
	}
	return len(msgs)
}

func hasText(m model.Message) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentText {
			return true
		}
	}
	return false
}

// estimateTokens guesses a context's size at four bytes a token.
func estimateTokens(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		for _, c := range m.Content {
			n += len(c.Text) + len(c.Input) + len(c.Raw) + len(c.Signature) + len(c.Data) + 16
		}
	}
	return n / 4
}

// maybeAutoCompact compacts before a request when the context has grown
// past the configured share of the window.
func (s *Session) maybeAutoCompact(ctx context.Context) error {
	if s.opts.AutoCompact < 0 {
		return nil
	}
	s.mu.Lock()
	tokens := max(s.ctxTokens, estimateTokens(s.ctxMsgs))
	s.mu.Unlock()
	if float64(tokens) < s.opts.AutoCompact*float64(s.opts.ContextWindow) {
		return nil
	}
	s.fire(ctx, EventPreCompact, "auto", map[string]any{"trigger": "auto", "custom_instructions": ""})
	return s.compact(ctx)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
