package agent

import (
	"strings"

	"github.com/sluicehq/sluice/protocol"
)

// price is a model's list price in USD per million tokens.
type price struct{ in, out float64 }

// prices by model-name prefix, most specific first. Cache writes cost 1.25×
// input and cache reads 0.1× input, as Anthropic lists them. Unknown models
// cost 0 (the figure is an estimate for people, never a bill).
var prices = []struct {
	prefix string
	p      price
}{
	{"claude-opus-4-1", price{15, 75}},
	{"claude-opus-4-0", price{15, 75}},
	{"claude-opus-4-2", price{15, 75}},
	{"claude-opus", price{5, 25}},
	{"claude-sonnet", price{3, 15}},
	{"claude-3-7-sonnet", price{3, 15}},
	{"claude-3-5-sonnet", price{3, 15}},
	{"claude-haiku-4", price{1, 5}},
	{"claude-3-5-haiku", price{0.8, 4}},
	// OpenAI's reasoning models (Responses API); their reasoning tokens are
	// output tokens. Cached input is 0.1× input, as for Anthropic.
	{"gpt-5-mini", price{0.25, 2}},
	{"gpt-5-nano", price{0.05, 0.4}},
	{"gpt-5-pro", price{15, 120}},
	{"gpt-5.1-codex-mini", price{0.25, 2}},
	{"gpt-5", price{1.25, 10}}, // gpt-5, gpt-5-codex, gpt-5.1, gpt-5.1-codex
	{"o3-pro", price{20, 80}},
	{"o3-mini", price{1.1, 4.4}},
	{"o3", price{2, 8}},
	{"o4-mini", price{1.1, 4.4}},
	{"gpt-4.1-mini", price{0.4, 1.6}},
	{"gpt-4.1", price{2, 8}},
	{"gpt-4o-mini", price{0.15, 0.6}},
	{"gpt-4o", price{2.5, 10}},
	{"deepseek", price{0.28, 0.42}},
	// Gemini's prices for prompts up to 200K tokens; cache reads cost
	// 0.1× input, as for 2.5 and 3.
	{"gemini-3-pro", price{2, 12}},
	{"gemini-3-flash", price{0.5, 3}},
	{"gemini-2.5-pro", price{1.25, 10}},
	{"gemini-2.5-flash-lite", price{0.1, 0.4}},
	{"gemini-2.5-flash", price{0.3, 2.5}},
	{"gemini-2.0-flash-lite", price{0.075, 0.3}},
	{"gemini-2.0-flash", price{0.1, 0.4}},
}

// contextWindows are models' context windows by name prefix, where they
// differ from the default of 200,000 tokens.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gemini-", 1_048_576},
	{"gpt-5-chat", 128_000}, // before gpt-5: the chat model's window is smaller
	{"gpt-5", 400_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
}

// ContextWindow is model's context window in tokens, for faces that
// report how full it is when none was configured.
func ContextWindow(model string) int { return contextWindow(model) }

// contextWindow is model's context window in tokens.
func contextWindow(model string) int {
	for _, e := range contextWindows {
		if strings.HasPrefix(model, e.prefix) {
			return e.tokens
		}
	}
	return 200_000
}

func cost(model string, u protocol.Usage) float64 {
	for _, e := range prices {
		if strings.HasPrefix(model, e.prefix) {
			in := float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens) + 0.1*float64(u.CacheReadInputTokens)
			return (in*e.p.in + float64(u.OutputTokens)*e.p.out) / 1e6
		}
	}
	return 0
}

// CostUSD estimates what usage costs at model's list price (0 when the
// model's price is unknown), for faces that report a session's cost.
func CostUSD(model string, u protocol.Usage) float64 { return cost(model, u) }
