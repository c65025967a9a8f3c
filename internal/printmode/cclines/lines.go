package cclines

import (
	"encoding/json"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// Conversions of sluice's values to the fields of Claude Code's lines
// (package streamjson has the lines).

// Denials are the permission_denials of a result line.
func Denials(ds []agent.Denial) []streamjson.Denial {
	out := make([]streamjson.Denial, len(ds))
	for i, d := range ds {
		in := json.RawMessage(d.Input)
		if !json.Valid(in) {
			in = json.RawMessage("{}")
		}
		out[i] = streamjson.Denial{ToolName: d.Name, ToolUseID: d.ToolID, ToolInput: in}
	}
	return out
}

func modelUsageOf(u model.Usage) api.Usage {
	return api.Usage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
}

func sessionUsageOf(u protocol.Usage) streamjson.ResultUsage {
	return streamjson.ResultUsage{
		Usage: api.Usage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens},
		ServiceTier: "standard",
		// The split by cache lifetime is not known; Anthropic's default
		// cache is the 5-minute one.
		CacheCreation: streamjson.CacheCreation{Ephemeral5mInputTokens: u.CacheCreationInputTokens},
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
