package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/model"
)

// sidePrompt asks the model to answer a side question without acting.
const sidePrompt = "This is a side question from the user (/btw), asked while you work. Answer it briefly from what you already know of this session; do not use any tool. Your answer will not be kept in the conversation."

// ErrEmptyAnswer is returned by Ask when the model answered with no text.
var ErrEmptyAnswer = errors.New("the model gave no answer")

// Ask answers a side question (/btw) from the session's context without
// entering it: neither the question nor the answer is added to the context,
// published or stored, so the session goes on as if it had not been asked.
// It may be called while a run is going; the context is read as it stands
// (a tool round still under way is left out). onText, when set, receives the
// answer's text as it streams; a retried attempt starts over with reset
// true.
func (s *Session) Ask(ctx context.Context, question string, onText func(chunk string, reset bool)) (string, error) {
	if strings.TrimSpace(question) == "" {
		return "", errors.New("ask: the question is empty")
	}
	req := s.request()
	req.System += "\n\n" + sidePrompt
	req.ThinkingBudget = 0
	msgs := req.Messages
	// A response whose tool calls have no results yet would make the
	// request invalid: the question is asked from before it.
	for len(msgs) > 0 && msgs[len(msgs)-1].Role == model.RoleAssistant && hasToolUse(msgs[len(msgs)-1]) {
		msgs = msgs[:len(msgs)-1]
	}
	req.Messages = append(msgs, model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: question}}})

	var answer strings.Builder
	textBlocks := map[int]bool{}
	for p, err := range model.Stream(ctx, s.opts.Provider, req, s.opts.Stream) {
		if err != nil {
			return "", fmt.Errorf("ask: %w", err)
		}
		switch p.Type {
		case model.PartRetry:
			answer.Reset()
			clear(textBlocks)
			if onText != nil {
				onText("", true)
			}
		case model.PartBlockStart:
			textBlocks[p.Index] = p.Block == model.BlockText
		case model.PartBlockDelta:
			if textBlocks[p.Index] && p.Delta == model.DeltaText {
				answer.WriteString(p.Text)
				if onText != nil {
					onText(p.Text, false)
				}
			}
		}
	}
	if strings.TrimSpace(answer.String()) == "" {
		return "", ErrEmptyAnswer
	}
	return answer.String(), nil
}

func hasToolUse(m model.Message) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentToolUse {
			return true
		}
	}
	return false
}
