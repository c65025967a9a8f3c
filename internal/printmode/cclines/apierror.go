package cclines

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
)

// A run that fails on the model's API ends as Claude Code's does (see
// testdata/claude-code/errors): an assistant line whose one text block says
// "API Error: STATUS MESSAGE" (is_api_error_message true), then a result
// whose result is that text, is_error true and subtype success, without
// errors. Programs built on the SDK show result to their user: the
// server's message reaches them.

// APIFailure reports whether err ended a run on the model's API (or on
// the way to it), rather than on one of the run's own limits.
func APIFailure(err error) bool {
	for _, own := range []error{ErrBudget, agent.ErrMaxTurns, agent.ErrMaxTokens, agent.ErrAborted, agent.ErrHookStopped,
		agent.ErrPromptBlocked, agent.ErrClosed, agent.ErrNotSaved, ErrInput, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, own) {
			return false
		}
	}
	return err != nil
}

// APIErrorText is what the user is shown of an API failure: the status
// and the server's own message, and what to do when sluice knows.
func APIErrorText(err error) string {
	var e *model.APIError
	if !errors.As(err, &e) {
		return "API Error: " + err.Error()
	}
	s := "API Error: "
	if e.Status != 0 {
		s += strconv.Itoa(e.Status) + " "
	}
	s += cmp.Or(e.Message, e.Type, "no message")
	if h := e.Hint(); h != "" && e.Status != 400 { // a 400's message says what is wrong
		s += " · " + h
	}
	return s
}

// assistantErrorKind names an API failure as Claude Code's assistant
// line does: 5xx and overload are server_error, a 404 is the model's,
// and a refused request is unknown.
func assistantErrorKind(err error) string {
	kind, status := errorKind(err)
	switch {
	case kind == "overloaded" || kind == "server_error":
		return "server_error"
	case kind == "invalid_request" && status != nil && *status == 404:
		return "model_not_found"
	case kind == "authentication_failed", kind == "rate_limit", kind == "billing_error":
		return kind
	}
	return "unknown"
}

// apiErrorType is the error type the server named, if any.
func apiErrorType(err error) string {
	var e *model.APIError
	if errors.As(err, &e) {
		return e.Type
	}
	return ""
}

// NewAPIErrorLine is the assistant line that tells of the API failure err
// before the run's result, as Claude Code writes it.
func NewAPIErrorLine(sessionID string, err error, now time.Time) streamjson.APIErrorLine {
	_, status := errorKind(err)
	stop, seq := "stop_sequence", ""
	return streamjson.APIErrorLine{
		Type: "assistant",
		Message: streamjson.AssistantMessage{Message: api.Message{
			ID: uuid.NewString(), Type: "message", Role: "assistant", Model: streamjson.SyntheticModel,
			Content:    []any{api.TextBlock{Type: "text", Text: APIErrorText(err)}},
			StopReason: &stop, StopSequence: &seq,
		}},
		SessionID: sessionID, UUID: uuid.NewString(), Timestamp: streamjson.Timestamp(now),
		Error: assistantErrorKind(err), IsAPIErrorMessage: true,
		APIErrorStatus: status, APIErrorType: apiErrorType(err),
	}
}
