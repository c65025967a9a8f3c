// Package scripted is an offline model.Provider for the terminal UI's
// end-to-end tests: it answers with reasoning, text, a Bash tool call and
// a markdown answer with a code block, streamed a few characters at a
// time, without a network.
//
// A request whose last user message mentions "tool" (and carries no tool
// result yet) gets a response that reasons, says what it will do and calls
// Bash; the request carrying the tool's result gets the markdown answer.
// Any other request gets reasoning and the markdown answer.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/sluicehq/sluice/model"
)

// Answer is the markdown answer; its last line is a marker the tests wait
// for.
const Answer = "## Result\n\nThe build is **green**. Here is the entry point:\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```\n\n" +
	"- tests pass\n- nothing to fix\n\nEND-OF-ANSWER"

// Command is the shell command of the tool call.
const Command = "printf 'alpha\\nbeta\\ngamma\\n'"

// Provider is the scripted provider. Delay is the pause between two
// streamed chunks (so that a person, or a terminal test, sees the
// typewriter); zero streams as fast as possible.
type Provider struct {
	Delay time.Duration
}

func (p *Provider) Name() string { return "scripted" }

// Stream yields the scripted response to req.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		for _, part := range script(req) {
			if p.Delay > 0 && part.Type == model.PartBlockDelta {
				t := time.NewTimer(p.Delay)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					yield(model.Part{}, ctx.Err())
					return
				}
			} else if err := ctx.Err(); err != nil {
				yield(model.Part{}, err)
				return
			}
			if !yield(part, nil) {
				return
			}
		}
	}
}

// Complete is not scripted: the stream never fails, so no fallback runs.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, errors.New("scripted: no non-streaming answers")
}

// script builds the parts of the response to req.
func script(req *model.Request) []model.Part {
	var b builder
	b.add(model.Part{Type: model.PartMessageStart, ID: fmt.Sprintf("msg_%d", len(req.Messages)), Model: "scripted", Usage: model.Usage{InputTokens: 120}})
	last := lastUser(req)
	switch {
	case hasToolResult(last):
		b.text("Thanks, the command worked.\n\n" + Answer)
		b.stop(model.StopEndTurn, 80)
	case mentions(last, "tool"):
		b.reasoning("The user wants me to run something. I will use Bash to print a few lines.")
		b.text("Let me run a command.")
		b.tool("toolu_1", "Bash", map[string]string{"command": Command, "description": "Print three lines"})
		b.stop(model.StopToolUse, 40)
	default:
		b.reasoning("Let me think about how to answer this well.")
		b.text(Answer)
		b.stop(model.StopEndTurn, 60)
	}
	return b.parts
}

type builder struct {
	parts []model.Part
	index int
}

func (b *builder) add(p model.Part) { b.parts = append(b.parts, p) }

func (b *builder) block(kind model.BlockType, delta model.DeltaType, text string, size int) {
	i := b.index
	b.index++
	b.add(model.Part{Type: model.PartBlockStart, Index: i, Block: kind})
	for len(text) > 0 {
		n := min(size, len(text))
		// Never cut a UTF-8 character.
		for n < len(text) && text[n]&0xC0 == 0x80 {
			n++
		}
		b.add(model.Part{Type: model.PartBlockDelta, Index: i, Delta: delta, Text: text[:n]})
		text = text[n:]
	}
	if kind == model.BlockReasoning {
		b.add(model.Part{Type: model.PartBlockDelta, Index: i, Delta: model.DeltaSignature, Text: "sig"})
	}
	b.add(model.Part{Type: model.PartBlockStop, Index: i})
}

func (b *builder) reasoning(text string) {
	b.block(model.BlockReasoning, model.DeltaReasoning, text, 6)
}
func (b *builder) text(text string) { b.block(model.BlockText, model.DeltaText, text, 4) }

func (b *builder) tool(id, name string, input any) {
	data, _ := json.Marshal(input)
	i := b.index
	b.index++
	b.add(model.Part{Type: model.PartBlockStart, Index: i, Block: model.BlockToolUse, ID: id, Name: name})
	s := string(data)
	for len(s) > 0 {
		n := min(7, len(s))
		b.add(model.Part{Type: model.PartBlockDelta, Index: i, Delta: model.DeltaInputJSON, Text: s[:n]})
		s = s[n:]
	}
	b.add(model.Part{Type: model.PartBlockStop, Index: i})
}

func (b *builder) stop(reason string, out int) {
	b.add(model.Part{Type: model.PartMessageDelta, StopReason: reason, Usage: model.Usage{InputTokens: 120, OutputTokens: out}})
	b.add(model.Part{Type: model.PartMessageStop})
}

func lastUser(req *model.Request) model.Message {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i]
		}
	}
	return model.Message{}
}

func hasToolResult(m model.Message) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentToolResult {
			return true
		}
	}
	return false
}

func mentions(m model.Message, word string) bool {
	for _, c := range m.Content {
		if c.Type == model.ContentText && strings.Contains(strings.ToLower(c.Text), word) {
			return true
		}
	}
	return false
}
