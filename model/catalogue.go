package model

import "strings"

// Info is what a provider states about the models whose names start
// with Prefix: their context window and list price. A zero field says
// nothing, and a shorter prefix's, or the default, holds.
type Info struct {
	Prefix string
	// ContextWindow is the models' context in tokens.
	ContextWindow int
	// Price is the list price; its zero value is no price.
	Price Price
}

// Price is a model's list price in USD per million tokens. Cache writes
// cost 1.25× input and cache reads 0.1× input, as Anthropic lists them
// (and OpenAI's and Gemini's cached input is priced alike).
type Price struct{ InputUSD, OutputUSD float64 }

// USD is what the tokens cost at p.
func (p Price) USD(input, cacheWrite, cacheRead, output int) float64 {
	in := float64(input) + 1.25*float64(cacheWrite) + 0.1*float64(cacheRead)
	return (in*p.InputUSD + float64(output)*p.OutputUSD) / 1e6
}

// Catalogue is a table of models' facts, each provider's entries joined
// in any order: a name takes each fact from the longest prefix that states
// it, so a mini model is not priced as its big sibling. A nil Catalogue
// knows no model.
type Catalogue []Info

// DefaultContextWindow is the context window of a model the catalogue
// gives none for.
const DefaultContextWindow = 200_000

// ContextWindow is name's context window in tokens, DefaultContextWindow
// when the catalogue does not say.
func (c Catalogue) ContextWindow(name string) int {
	best, tokens := -1, DefaultContextWindow
	for _, m := range c {
		if m.ContextWindow > 0 && len(m.Prefix) > best && strings.HasPrefix(name, m.Prefix) {
			best, tokens = len(m.Prefix), m.ContextWindow
		}
	}
	return tokens
}

// Price is name's list price; false when the catalogue has none (an
// estimate for people, never a bill, is then 0 rather than a guess).
func (c Catalogue) Price(name string) (Price, bool) {
	best, price := -1, Price{}
	for _, m := range c {
		if m.Price != (Price{}) && len(m.Prefix) > best && strings.HasPrefix(name, m.Prefix) {
			best, price = len(m.Prefix), m.Price
		}
	}
	return price, best >= 0
}
