package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// A side question is answered from the session's context and leaves no
// trace: no event, no context entry, nothing the next request carries.
func TestAskLeavesNoTrace(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(
		modeltest.Answer("m1", "Hello, Ada."),
		modeltest.Answer("m2", "Your ", "name is Ada."),
		modeltest.Answer("m3", "Done."),
	)
	s := newSession(t, p, nil)
	if _, err := s.Run(context.Background(), "My name is Ada."); err != nil {
		t.Fatal(err)
	}
	seq := s.Seq()
	var streamed strings.Builder
	answer, err := s.Ask(context.Background(), "btw, what is my name?", func(chunk string, reset bool) {
		if reset {
			streamed.Reset()
		}
		streamed.WriteString(chunk)
	})
	if err != nil || answer != "Your name is Ada." || streamed.String() != answer {
		t.Fatalf("Ask = %q (streamed %q), %v", answer, streamed.String(), err)
	}
	side := p.Request(1)
	if n := len(side.Messages); n != 3 || side.Messages[2].Content[0].Text != "btw, what is my name?" || !strings.Contains(side.System, "/btw") {
		t.Fatalf("side request: %d messages, system %q", n, side.System)
	}
	if s.Seq() != seq {
		t.Errorf("Ask published %d events", s.Seq()-seq)
	}
	if _, err := s.Run(context.Background(), "Thanks."); err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Request(2).Messages {
		for _, c := range m.Content {
			if c.Type == model.ContentText && strings.Contains(c.Text, "btw") || strings.Contains(c.Text, "Your name is Ada") {
				t.Errorf("the side question entered the context: %+v", m)
			}
		}
	}
}
