package agent

import (
	"math"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// Prices by the most specific prefix: a mini model is not priced as its
// big sibling, and an unknown model costs nothing rather than a guess.
func TestCost(t *testing.T) {
	t.Parallel()
	u := protocol.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}
	for _, tc := range []struct {
		model string
		want  float64
	}{
		{"gpt-5", 1.25 + 10 + 0.125},
		{"gpt-5-codex", 1.25 + 10 + 0.125},
		{"gpt-5-mini-2025-08-07", 0.25 + 2 + 0.025},
		{"o3", 2 + 8 + 0.2},
		{"o3-mini", 1.1 + 4.4 + 0.11},
		{"o4-mini", 1.1 + 4.4 + 0.11},
		{"gpt-4.1-mini", 0.4 + 1.6 + 0.04},
		{"claude-sonnet-4-6", 3 + 15 + 0.3},
		{"unknown-model", 0},
	} {
		if got := CostUSD(tc.model, u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.model, got, tc.want)
		}
	}
}
