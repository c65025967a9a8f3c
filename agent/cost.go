package agent

import (
	"github.com/sluicehq/sluice/protocol"
)

// cost estimates what u costs at model's list price in the session's
// catalogue (0 when it has none: the figure is an estimate for people,
// never a bill).
func (s *Session) cost(model string, u protocol.Usage) float64 {
	p, ok := s.opts.Catalogue.Price(model)
	if !ok {
		return 0
	}
	return p.USD(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
}

// CostUSD estimates what usage costs at the list price of the session's
// model in its options' Catalogue (0 when the price is unknown), for
// faces that report a session's cost.
func (s *Session) CostUSD(u protocol.Usage) float64 { return s.cost(s.Model(), u) }

// ModelContextWindow is the context window of the session's model (the
// one in use now) in its options' Catalogue, for faces that report how
// full it is when none was configured.
func (s *Session) ModelContextWindow() int { return s.opts.Catalogue.ContextWindow(s.Model()) }
