package agent_test

import (
	"testing"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// usageStop ends a response whose billed input and context size differ,
// as a turn of server tools does (every request of the server's
// iterations is billed; the context is the latest request's).
func usageStop(reason string, billed, context int) []modeltest.Step {
	return []modeltest.Step{
		{Part: model.Part{Type: model.PartMessageDelta, StopReason: reason,
			Usage: model.Usage{InputTokens: billed, OutputTokens: 500, ContextTokens: context}}},
		{Part: model.Part{Type: model.PartMessageStop}},
	}
}

func compacted(s interface{ Messages() protocol.Snapshot }) bool {
	for _, m := range s.Messages().Messages {
		for _, b := range m.Blocks {
			if b.Type == protocol.BlockCompact {
				return true
			}
		}
	}
	return false
}

// Auto-compaction takes the latest request's input as the context's size,
// not the billed sum over a server tool's iterations.
func TestAutoCompactUsesContextSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		billed, context int
		compact         bool
	}{
		{"fifteen searches, small context", 404_000, 80_000, false},
		{"context past the threshold", 404_000, 180_000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := modeltest.NewScript(
				modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Searched fifteen times."), usageStop(model.StopEndTurn, tt.billed, tt.context)),
				modeltest.Answer("sum", "Summary."),
				modeltest.Answer("m2", "Next."),
			)
			s := newSession(t, p, nil) // 200k window, compaction at 85 %
			if _, err := s.Run(bg(t), "search a lot"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(bg(t), "next"); err != nil {
				t.Fatal(err)
			}
			if compacted(s) != tt.compact {
				t.Fatalf("compacted %v, want %v (%d requests)", compacted(s), tt.compact, p.Count())
			}
		})
	}
}

// A paused turn goes back as it is: no compaction in the middle of it,
// however large the context.
func TestPauseTurnIsNotCompacted(t *testing.T) {
	t.Parallel()
	raw := `{"type":"server_tool_use","id":"srv1","name":"web_search","input":{}}`
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), []modeltest.Step{
			{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockRaw, Raw: []byte(raw)}},
			{Part: model.Part{Type: model.PartBlockStop, Index: 0}},
		}, usageStop(model.StopPauseTurn, 190_000, 190_000)),
		modeltest.Answer("m2", "Found it."),
		modeltest.Answer("sum", "Summary."),
	)
	s := newSession(t, p, nil)
	res, err := s.Run(bg(t), "search")
	if err != nil || res.Text != "Found it." {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if compacted(s) || p.Count() != 2 {
		t.Fatalf("compacted %v after %d requests", compacted(s), p.Count())
	}
	if last := p.Request(1).Messages[len(p.Request(1).Messages)-1]; last.Role != model.RoleAssistant || last.Content[0].Type != model.ContentRaw {
		t.Fatalf("the paused turn did not go back as it was: %+v", last)
	}
}
