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
