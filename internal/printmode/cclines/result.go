package cclines

import (
	"cmp"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/session"
)

// ErrInput is the cause of a result written because the input ended on a
// line that cannot be taken: sluice's own failure, not the API's.
var ErrInput = errors.New("reading stream-json input")

// roundCost rounds a cost in dollars to a billionth, so that a sum of
// per-token prices does not print as 0.026279999999999998.
func roundCost(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }

// NewResultLine is the last line of a run, in Claude Code's shape. The
// result of a run that succeeded is its answer (session.JobResult.Text, what
// --output-format text prints): the whole answer, joined across
// automatic max_tokens continuations (continued_after names the stop
// reason that cut it). A run that failed on the model's API has is_error
// true and the failure's text as its result (APIErrorText); one stopped
// by a limit or aborted has an error_* subtype, no result and its cause
// in errors. sessionID and model (the session's model now, named in
// modelUsage unless a fallback answered) are the session's: the line
// needs its identity, not the session.
func NewResultLine(sessionID, model string, res session.JobResult, answer string, err error, d time.Duration) streamjson.ResultLine {
	line := streamjson.ResultLine{
		Type: "result", Subtype: "success",
		DurationMs: d.Milliseconds(), DurationAPIMs: res.APIDuration.Milliseconds(),
		NumTurns: res.Turns, Result: &answer, StopReason: nullable(res.StopReason), ContinuedAfter: res.Continued,
		SessionID: sessionID, TotalCostUSD: roundCost(res.CostUSD), Usage: sessionUsageOf(res.Usage),
		ModelUsage: map[string]streamjson.ModelUsage{}, PermissionDenials: Denials(res.Denials),
		FastModeState: "off", UUID: uuid.NewString(),
	}
	// total_cost_usd and modelUsage count the subagents' responses too;
	// usage is the session's own, as in Claude Code.
	own := res.CostUSD
	for _, r := range res.Subagents {
		own -= r.CostUSD
	}
	if res.Turns > 0 {
		line.ModelUsage[cmp.Or(res.FallbackModel, model)] = streamjson.ModelUsage{
			InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CacheReadInputTokens: res.Usage.CacheReadInputTokens, CacheCreationInputTokens: res.Usage.CacheCreationInputTokens,
			CostUSD: roundCost(own),
		}
	}
	if len(res.Subagents) > 0 {
		st := &streamjson.SubagentStats{ByType: map[string]int{}}
		for _, r := range res.Subagents {
			st.Spawned++
			st.ByType[r.Type]++
			if r.Failed {
				st.Failed++
			} else {
				st.Completed++
			}
			mu := line.ModelUsage[r.Model]
			mu.InputTokens += r.Usage.InputTokens
			mu.OutputTokens += r.Usage.OutputTokens
			mu.CacheReadInputTokens += r.Usage.CacheReadInputTokens
			mu.CacheCreationInputTokens += r.Usage.CacheCreationInputTokens
			mu.CostUSD = roundCost(mu.CostUSD + r.CostUSD)
			line.ModelUsage[r.Model] = mu
		}
		line.SubagentStats = st
	}
	if err == nil {
		line.TerminalReason = "completed"
		return line
	}
	line.IsError = true
	if APIFailure(err) {
		// Claude Code's subtype is success: the run ended with an answer,
		// which is the failure's text.
		text, stop := APIErrorText(err), "stop_sequence"
		line.Result, line.StopReason, line.TerminalReason = &text, &stop, "api_error"
		_, line.APIErrorStatus = errorKind(err)
		line.APIErrorType = apiErrorType(err)
		return line
	}
	line.Result, line.Subtype, line.TerminalReason = nil, "error_during_execution", "model_error"
	switch {
	case errors.Is(err, ErrBudget):
		line.Subtype, line.TerminalReason = "error_max_budget_usd", "budget_exhausted"
	case errors.Is(err, agent.ErrMaxTurns):
		line.Subtype, line.TerminalReason = "error_max_turns", "max_turns"
	case errors.Is(err, agent.ErrAborted):
		line.TerminalReason = "aborted_streaming"
	}
	line.Errors = []string{Capitalized(err.Error())}
	return line
}

// ErrBudget is the error of a run stopped by a budget (print mode's --max-budget-usd).
var ErrBudget = errors.New("reached the maximum budget")

func (o Options) maxRetries() int {
	switch {
	case o.MaxRetries == 0:
		return model.DefaultMaxRetries
	case o.MaxRetries < 0:
		return 0
	}
	return o.MaxRetries
}
