package demo

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bash = []model.Tool{{Name: "Bash", InputSchema: json.RawMessage(`{"type":"object"}`)}}

func user(text string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: text}}}
}

// run streams req through model.Stream with the pauses recorded, and
// returns the accumulated response and the pauses.
func run(t *testing.T, req *model.Request) (*model.Response, []time.Duration, []model.Part) {
	t.Helper()
	var pauses []time.Duration
	p := New(Config{Sleep: func(ctx context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		return ctx.Err()
	}})
	var acc model.Accumulator
	var parts []model.Part
	for part, err := range model.Stream(t.Context(), p, req, model.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := acc.Add(part); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part)
	}
	return acc.Response(), pauses, parts
}

func TestSession(t *testing.T) {
	t.Parallel()
	// Turn 1: reasoning, text, a Bash call.
	req := &model.Request{Tools: bash, Messages: []model.Message{user("hello")}}
	r1, pauses, parts := run(t, req)
	if r1.StopReason != model.StopToolUse || len(r1.Content) != 3 || r1.Content[0].Type != model.ContentReasoning || r1.Content[1].Type != model.ContentText {
		t.Fatalf("turn 1: %+v", r1)
	}
	var input struct{ Command string }
	if err := json.Unmarshal(r1.Content[2].Input, &input); err != nil || r1.Content[2].Name != "Bash" || input.Command != BashCommand {
		t.Fatalf("tool call %+v", r1.Content[2])
	}
	if !reflect.DeepEqual(r1, Respond(req)) {
		t.Fatal("the stream does not add up to the scripted answer")
	}
	deltas := 0
	for _, p := range parts {
		if p.Type == model.PartBlockDelta {
			deltas++
			if !utf8.ValidString(p.Text) {
				t.Fatalf("chunk %q cuts a character", p.Text)
			}
		}
	}
	if deltas < 10 || len(pauses) != deltas || pauses[0] != DefaultDelay {
		t.Fatalf("%d deltas, %d pauses of %v", deltas, len(pauses), pauses[:1])
	}

	// Turn 2: the tool result gets the long answer.
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: r1.Content},
		model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentToolResult, ID: r1.Content[2].ID, Text: "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n"}}})
	r2, _, _ := run(t, req)
	answer := r2.Content[0].Text
	if r2.StopReason != model.StopEndTurn || !strings.Contains(answer, "printed 5 line(s)") || !strings.Contains(answer, "`step 5`") ||
		!strings.Contains(answer, "```sh\n") || !strings.Contains(answer, "中文") || !strings.Contains(answer, "🚀") || !strings.Contains(answer, "\n- ") ||
		strings.Count(answer, "\n\n") < 6 {
		t.Fatalf("turn 2: %q", answer)
	}

	// Later turns: varied, deterministic, some with reasoning.
	shapes := map[string]bool{}
	reasoned := 0
	for _, q := range []string{"what next?", "how does retry work", "show me code", "tables?", "why Go", "thanks!", "what is a block", "more"} {
		msgs := append(append([]model.Message{}, req.Messages...), model.Message{Role: model.RoleAssistant, Content: r2.Content}, user(q))
		later := &model.Request{Tools: bash, Messages: msgs}
		r, _, _ := run(t, later)
		if r.StopReason != model.StopEndTurn || !reflect.DeepEqual(r, Respond(later)) {
			t.Fatalf("%q: %+v", q, r)
		}
		last := r.Content[len(r.Content)-1].Text
		if !strings.Contains(last, q) {
			t.Fatalf("%q: the answer does not echo the question: %q", q, last)
		}
		shapes[strings.SplitN(strings.ReplaceAll(last, q, ""), "\n", 2)[0]] = true
		if r.Content[0].Type == model.ContentReasoning {
			reasoned++
		}
	}
	if len(shapes) < 3 || reasoned == 0 || reasoned == 8 {
		t.Fatalf("%d shapes, %d with reasoning", len(shapes), reasoned)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, req := range []*model.Request{
		{System: "Summarize the conversation so far for a new context window.", Messages: []model.Message{user("hello"), user("more")}},
		{Tools: bash, Messages: []model.Message{user("hello"), user("/compact")}},
	} {
		r := Respond(req)
		if len(r.Content) != 1 || !strings.HasPrefix(r.Content[0].Text, "Summary:") || len(r.Content[0].Text) > 400 {
			t.Fatalf("%+v", r)
		}
	}
}

func TestNoBashTool(t *testing.T) {
	t.Parallel()
	r := Respond(&model.Request{Messages: []model.Message{user("hello")}})
	if r.StopReason != model.StopEndTurn || r.Content[0].Type != model.ContentText || !strings.Contains(r.Content[0].Text, "```sh") {
		t.Fatalf("%+v", r)
	}
}

func TestFailedTool(t *testing.T) {
	t.Parallel()
	r := Respond(&model.Request{Messages: []model.Message{user("hi"), {Role: model.RoleUser, Content: []model.Content{{Type: model.ContentToolResult, ID: "t", Text: "sh: not found\nmore", IsError: true}}}}})
	if !strings.HasPrefix(r.Content[0].Text, "The command failed (sh: not found)") {
		t.Fatalf("%q", r.Content[0].Text)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := New(Config{Delay: time.Hour}) // the real timer: cancellation must end the wait
	var err error
	n := 0
	for part, e := range p.Stream(ctx, &model.Request{Tools: bash, Messages: []model.Message{user("hi")}}) {
		if e != nil {
			err = e
			break
		}
		if n++; part.Type == model.PartBlockStart {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "short", strings.Repeat("word ", 40), "多语言也没问题：这一段中文用来检查宽字符的换行", "emoji 🚀🚀🚀🚀🚀🚀🚀🚀 end", strings.Repeat("x", 100)} {
		cs := chunks(s, 12)
		if strings.Join(cs, "") != s {
			t.Fatalf("%q: chunks do not add up", s)
		}
		for _, c := range cs {
			if !utf8.ValidString(c) || len(c) > 24+utf8.UTFMax || c == "" {
				t.Fatalf("%q: bad chunk %q", s, c)
			}
		}
	}
}
