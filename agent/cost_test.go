package agent

import (
	"math"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

func TestCostAndContextWindow(t *testing.T) {
	t.Parallel()
	u := protocol.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}
	for _, tt := range []struct {
		model  string
		usd    float64
		window int
	}{
		{"claude-sonnet-4-6", 3 + 15 + 0.3, 200_000},
		{"gemini-2.5-pro", 1.25 + 10 + 0.125, 1_048_576},
		{"gemini-2.5-flash-lite", 0.1 + 0.4 + 0.01, 1_048_576},
		{"gemini-2.5-flash", 0.3 + 2.5 + 0.03, 1_048_576},
		{"gemini-3-pro-preview", 2 + 12 + 0.2, 1_048_576},
		{"unknown-model", 0, 200_000},
	} {
		if got := CostUSD(tt.model, u); math.Abs(got-tt.usd) > 1e-9 {
			t.Errorf("%s: $%v, want $%v", tt.model, got, tt.usd)
		}
		if got := contextWindow(tt.model); got != tt.window {
			t.Errorf("%s: window %d, want %d", tt.model, got, tt.window)
		}
	}
}
