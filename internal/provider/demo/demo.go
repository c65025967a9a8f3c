// Package demo is a built-in offline provider: it streams a scripted,
// deterministic session at a realistic pace so that sluice runs fully
// without a network or an API key.
//
// The script, chosen from the request alone:
//   - a request to summarize or compact the conversation gets a short summary;
//   - the first user message gets reasoning, a sentence, then a Bash tool call
//     whose command prints five steps over two seconds (when the request
//     offers a Bash tool; otherwise the long answer below);
//   - a tool result gets a long markdown answer (headings, a list, a fenced
//     code block, CJK text, an emoji) that ends the turn;
//   - later user messages get varied answers picked by a hash of their text,
//     some with reasoning.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/model"
)

// DefaultDelay is the pause between two chunks: about forty chunks a
// second, the pace of a fast hosted model.
const DefaultDelay = 25 * time.Millisecond

// BashCommand is the command of the scripted tool call: safe, portable, and
// slow enough to show output streaming.
const BashCommand = `for i in 1 2 3 4 5; do echo "step $i"; sleep 0.4; done`

// Config configures the demo.
type Config struct {
	// Delay is the pause between chunks: DefaultDelay when 0, none when
	// negative.
	Delay time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error; nil uses a
	// timer. Tests inject one that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Provider is the demo provider. It is safe for concurrent use.
type Provider struct {
	delay time.Duration
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a demo provider.
func New(cfg Config) *Provider {
	p := &Provider{delay: cfg.Delay, sleep: cfg.Sleep}
	if p.delay == 0 {
		p.delay = DefaultDelay
	}
	if p.sleep == nil {
		p.sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return p
}

// Name returns "demo".
func (p *Provider) Name() string { return "demo" }

// Model is the model name the demo answers as.
func (p *Provider) Model() string { return "demo" }

// Stream yields the scripted answer to req, chunk by chunk.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		resp := Respond(req)
		for part := range streamParts(resp) {
			if part.Type == model.PartBlockDelta && p.delay > 0 {
				if err := p.sleep(ctx, p.delay); err != nil {
					yield(model.Part{}, err)
					return
				}
			}
			if !yield(part, nil) {
				return
			}
		}
	}
}

// Complete returns the scripted answer to req whole.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Respond(req), nil
}

// streamParts is resp's parts with its text cut into the small chunks a
// model streams.
func streamParts(resp *model.Response) iter.Seq[model.Part] {
	return func(yield func(model.Part) bool) {
		for part := range resp.Parts() {
			if part.Type != model.PartBlockDelta || part.Delta == model.DeltaSignature {
				if !yield(part) {
					return
				}
				continue
			}
			size := 12
			if part.Delta == model.DeltaInputJSON {
				size = 20
			}
			for _, chunk := range chunks(part.Text, size) {
				part.Text = chunk
				if !yield(part) {
					return
				}
			}
		}
	}
}

// chunks cuts s after spaces and newlines, into pieces of about size bytes,
// never inside a character.
func chunks(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		end := 0
		for end < len(s) {
			r, n := utf8.DecodeRuneInString(s[end:])
			end += n
			if end >= size && (r == ' ' || r == '\n' || r >= 0x2E80) || end >= 2*size {
				break
			}
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// Respond is the demo's answer to req.
func Respond(req *model.Request) *model.Response {
	h := fnv.New64a()
	users := 0
	var last model.Message
	for _, m := range req.Messages {
		for _, c := range m.Content {
			h.Write([]byte(c.Text))
			h.Write(c.Input)
		}
		if m.Role == model.RoleUser && hasText(m) {
			users++
		}
		last = m
	}
	sum := h.Sum64()
	prompt := lastText(last)
	resp := &model.Response{ID: fmt.Sprintf("msg_demo_%016x", sum), Model: "demo", StopReason: model.StopEndTurn}
	if req.Model != "" {
		resp.Model = req.Model
	}
	switch {
	case summaryRequested(req.System, prompt):
		resp.Content = []model.Content{{Type: model.ContentText, Text: summary(users)}}
	case hasToolResult(last):
		resp.Content = []model.Content{{Type: model.ContentText, Text: longAnswer(toolResult(last))}}
	case users <= 1 && offersBash(req):
		resp.StopReason = model.StopToolUse
		input, _ := json.Marshal(map[string]string{"command": BashCommand, "description": "Print five steps, slowly"})
		resp.Content = []model.Content{
			{Type: model.ContentReasoning, Text: firstReasoning},
			{Type: model.ContentText, Text: "Let me show you how a tool call streams: I'll run a short loop that prints five steps."},
			{Type: model.ContentToolUse, ID: fmt.Sprintf("toolu_demo_%016x", sum), Name: "Bash", Input: input},
		}
	case users <= 1:
		resp.Content = []model.Content{{Type: model.ContentText, Text: longAnswer("")}}
	default:
		resp.Content = later(prompt, sum)
	}
	resp.Usage = model.Usage{InputTokens: tokens(req), OutputTokens: outputTokens(resp)}
	return resp
}

func hasText(m model.Message) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentText && c.Text != "" {
			return true
		}
	}
	return false
}

func lastText(m model.Message) string {
	var texts []string
	for _, c := range m.Content {
		if c.Type == model.ContentText {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func hasToolResult(m model.Message) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentToolResult {
			return true
		}
	}
	return false
}

func toolResult(m model.Message) string {
	for _, c := range m.Content {
		if c.Type == model.ContentToolResult {
			if c.IsError {
				return "error: " + c.Text
			}
			return c.Text
		}
	}
	return ""
}

func offersBash(req *model.Request) bool {
	for _, t := range req.Tools {
		if t.Name == "Bash" {
			return true
		}
	}
	return false
}

// summaryRequested recognises a compaction or summary request in the
// system prompt or the last user text.
func summaryRequested(system, prompt string) bool {
	for _, s := range []string{strings.ToLower(system), strings.ToLower(prompt)} {
		for _, phrase := range []string{"summarize the conversation", "summarise the conversation", "summary of the conversation", "summarize this conversation", "compact the conversation", "/compact"} {
			if strings.Contains(s, phrase) {
				return true
			}
		}
	}
	return false
}

func tokens(req *model.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, c := range m.Content {
			n += len(c.Text) + len(c.Input)
		}
	}
	return n/4 + 1
}

func outputTokens(resp *model.Response) int {
	n := 0
	for _, c := range resp.Content {
		n += len(c.Text) + len(c.Input)
	}
	return n/4 + 1
}

const firstReasoning = "The user is trying sluice without an API key, so this is the demo. " +
	"A good first turn shows every kind of output: this reasoning, some text, " +
	"and a tool call whose output streams while it runs. A short shell loop does that safely."

func summary(users int) string {
	return fmt.Sprintf("Summary: the user started a sluice demo session and sent %d message(s). "+
		"The assistant ran a Bash loop that printed five steps, explained how sluice streams "+
		"reasoning, text and tool output, and answered the follow-up questions. No files were changed.", users)
}

func longAnswer(result string) string {
	var b strings.Builder
	switch {
	case strings.HasPrefix(result, "error: "):
		first, _, _ := strings.Cut(strings.TrimPrefix(result, "error: "), "\n")
		fmt.Fprintf(&b, "The command failed (%s), but the turn still shows how sluice handles it.\n\n", strings.TrimSpace(first))
	case result != "":
		lines := strings.Split(strings.TrimSpace(result), "\n")
		fmt.Fprintf(&b, "The command finished: it printed %d line(s), the last one being `%s`.\n\n", len(lines), strings.TrimSpace(lines[len(lines)-1]))
	default:
		b.WriteString("Welcome to the sluice demo. Everything you see is scripted and runs offline.\n\n")
	}
	b.WriteString(`## What ran

The demo asked the Bash tool to run a small loop:

` + "```sh" + `
for i in 1 2 3 4 5; do
  echo "step $i"
  sleep 0.4
done
` + "```" + `

Each round printed a line and paused for 0.4 s, so the run took about two seconds. The tool streamed its output while it ran, which is why the steps appeared one by one.

## What sluice did

- **Streamed every delta** of this answer as it arrived, without throttling.
- **Ran the tool** and showed its growing output while it worked.
- **Kept the order**: reasoning, text, tool call, result, then this answer.

## Things to try next

1. Ask another question: later turns get varied answers.
2. Type ` + "`/compact`" + ` to fold the conversation into a summary.
3. Press Esc while an answer streams to stop it and keep what arrived.

多语言也没问题：这一段中文用来检查宽字符的换行与对齐，日本語もどうぞ。🚀

Set ` + "`ANTHROPIC_API_KEY`" + ` or ` + "`OPENAI_API_KEY`" + ` to talk to a real model.`)
	return b.String()
}

// later answers a follow-up message, picking one of a few shapes by hash.
func later(prompt string, sum uint64) []model.Content {
	quoted := strings.TrimSpace(prompt)
	if r := []rune(quoted); len(r) > 60 {
		quoted = string(r[:60]) + "…"
	}
	text := func(s string) []model.Content { return []model.Content{{Type: model.ContentText, Text: s}} }
	switch sum % 4 {
	case 0:
		return append([]model.Content{{Type: model.ContentReasoning, Text: "The user asked a follow-up. In the demo there is no real model, so the honest answer explains that and points at the configuration."}},
			text(fmt.Sprintf("You asked: “%s”.\n\nThis is the offline demo, so I can't really answer that, but a real model can: set `ANTHROPIC_API_KEY` or `OPENAI_API_KEY` (and `OPENAI_BASE_URL` for Ollama, vLLM or llama.cpp) and run sluice again.", quoted))...)
	case 1:
		return text(fmt.Sprintf("About “%s” — here are three things sluice keeps right while streaming:\n\n- every delta goes to exactly one block, named by index;\n- a retried attempt is discarded before the next one starts;\n- a stalled stream is reported, then aborted and retried.", quoted))
	case 2:
		return append([]model.Content{{Type: model.ContentReasoning, Text: "A code sample makes a good demo of fenced blocks streaming in pieces."}},
			text(fmt.Sprintf("Here is how a Go program reads a model stream with sluice (re: “%s”):\n\n```go\nfor part, err := range model.Stream(ctx, provider, req, model.StreamOptions{}) {\n\tif err != nil {\n\t\treturn err\n\t}\n\tacc.Add(part)\n}\n```\n\nEach part is one delta; the accumulator builds the whole message.", quoted))...)
	default:
		return text(fmt.Sprintf("“%s” — noted. A small table, to show that tables stream too:\n\n| face | command |\n|---|---|\n| terminal | `sluice` |\n| scripts | `sluice -p` |\n| IDEs | `sluice rpc` |\n\n表格里也可以有中文。✅", quoted))
	}
}
