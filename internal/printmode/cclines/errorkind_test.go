package cclines

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/model"
)

// api_retry lines name the failure as Claude Code does.
func TestErrorKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		kind   string
		status int
	}{
		{&model.APIError{Status: 529}, "overloaded", 529},
		{&model.APIError{Type: "overloaded_error"}, "overloaded", 0},
		{fmt.Errorf("wrapped: %w", &model.APIError{Status: 429}), "rate_limit", 429},
		{&model.APIError{Status: 401}, "authentication_failed", 401},
		{&model.APIError{Status: 403}, "authentication_failed", 403},
		{&model.APIError{Status: 500}, "server_error", 500},
		{&model.APIError{Status: 408}, "server_error", 408},
		{&model.APIError{Type: "api_error"}, "server_error", 0},
		{&model.APIError{Status: 400}, "invalid_request", 400},
		{&model.APIError{Status: 413}, "invalid_request", 413},
		{model.ErrIdleTimeout, "unknown", 0},
		{fmt.Errorf("anthropic: %w: content_block_delta event", model.ErrMalformedEvent), "server_error", 0},
		{fmt.Errorf("model: giving up: %w", model.ErrIncomplete), "server_error", 0},
		{model.ErrNotEventStream, "server_error", 0},
		{errors.New("connection reset"), "unknown", 0},
	} {
		kind, status := errorKind(c.err)
		got := 0
		if status != nil {
			got = *status
		}
		if kind != c.kind || got != c.status {
			t.Errorf("errorKind(%v) = %q, %d; want %q, %d", c.err, kind, got, c.kind, c.status)
		}
	}
}
