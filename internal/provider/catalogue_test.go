package provider

import (
	"math"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// The catalogue prices by the most specific prefix: a mini model is not priced as its
// big sibling, and an unknown model costs nothing rather than a guess.
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
		{"gpt-5", 1.25 + 10 + 0.125, 400_000},
		{"gpt-5-codex", 1.25 + 10 + 0.125, 400_000},
		{"gpt-5-mini-2025-08-07", 0.25 + 2 + 0.025, 400_000},
		{"o3", 2 + 8 + 0.2, 200_000},
		{"o3-mini", 1.1 + 4.4 + 0.11, 200_000},
		{"o4-mini", 1.1 + 4.4 + 0.11, 200_000},
		{"gpt-4.1-mini", 0.4 + 1.6 + 0.04, 1_047_576},
		{"gpt-5-chat-latest", 1.25 + 10 + 0.125, 128_000},
		{"gpt-4o", 2.5 + 10 + 0.25, 128_000},
		{"gpt-4o-mini", 0.15 + 0.6 + 0.015, 128_000},
		{"unknown-model", 0, 200_000},
	} {
		p, _ := Catalogue.Price(tt.model)
		if got := p.USD(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens); math.Abs(got-tt.usd) > 1e-9 {
			t.Errorf("%s: $%v, want $%v", tt.model, got, tt.usd)
		}
		if got := Catalogue.ContextWindow(tt.model); got != tt.window {
			t.Errorf("%s: window %d, want %d", tt.model, got, tt.window)
		}
	}
}
