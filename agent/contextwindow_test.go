package agent_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Auto-compaction's threshold (85 %) is of the model's own window (in the
// providers' catalogue) when none is configured, as sluice -p --provider openai-responses runs gpt-5 (its
// default): a 300K context fits gpt-5's 400K and is kept, where the 200K
// default would have compacted it; past 340K it is compacted. The 128K
// models compact before the default's threshold.
func TestAutoCompactAtModelWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		model   string
		context int
		compact bool
	}{
		{"gpt-5", 300_000, false},
		{"gpt-5", 345_000, true},
		{"gpt-5-codex", 345_000, true},
		{"gpt-4.1", 800_000, false},
		{"gpt-4.1", 900_000, true},
		{"gpt-5-chat-latest", 110_000, true},
		{"gpt-4o", 110_000, true},
		{"gpt-4o", 100_000, false},
		{"o3", 165_000, false},
		{"o3", 175_000, true},
	} {
		t.Run(fmt.Sprintf("%s_at_%dK", tt.model, tt.context/1000), func(t *testing.T) {
			t.Parallel()
			p := modeltest.NewScript(
				modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Read a lot."), usageStop(model.StopEndTurn, tt.context, tt.context)),
				modeltest.Answer("sum", "Summary."),
				modeltest.Answer("m2", "Next."),
			)
			s := newSession(t, p, func(o *agent.Options) { o.Model, o.Catalogue = tt.model, provider.Catalogue })
			if _, err := s.Run(bg(t), "read a lot"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(bg(t), "next"); err != nil {
				t.Fatal(err)
			}
			if compacted(s) != tt.compact {
				t.Fatalf("%s at %d tokens: compacted %v, want %v", tt.model, tt.context, compacted(s), tt.compact)
			}
		})
	}
}
