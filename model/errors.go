package model

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrIncomplete: the stream ended without its final event
	// (message_stop, [DONE]).
	ErrIncomplete = errors.New("model stream ended before its final event")
	// ErrNotEventStream: a 200 answer whose body is not an event stream,
	// such as a proxy's HTML page.
	ErrNotEventStream = errors.New("model answer is not an event stream")
	// ErrIdleTimeout: no byte arrived within the idle timeout.
	ErrIdleTimeout = errors.New("model stream idle timeout")
	// ErrContextOverflow: the request does not fit the model's context
	// window; compact and retry.
	ErrContextOverflow = errors.New("prompt is too long for the model's context window")
	// ErrEventTooLarge: one event exceeded the configured maximum size.
	ErrEventTooLarge = errors.New("model stream event exceeds the maximum size")
	// ErrMalformedEvent: an event of the stream could not be decoded (bad
	// JSON, a delta for a block that was never started). Retried once; when
	// it recurs, Stream tries the non-streaming request instead.
	ErrMalformedEvent = errors.New("model stream event is malformed")
	// ErrInvalidRequest: the request could not be built (an invalid JSON
	// tool input or schema). Never retried.
	ErrInvalidRequest = errors.New("model request is invalid")
	// ErrResponseTooLarge: the answer's body passed the maximum response
	// size (StreamOptions.MaxResponseSize). Never retried: the same request
	// would get the same answer.
	ErrResponseTooLarge = errors.New("model answer exceeds the maximum response size")
	// ErrRedirect: the server redirected the request somewhere sluice does
	// not follow (another host, which must not get the credentials, or a
	// redirect that would turn the POST into a GET). Never retried: the
	// base URL needs fixing.
	ErrRedirect = errors.New("model API redirected the request")
)

// APIError is an error answer of a model API, in the HTTP status or as an
// error event inside a 200 stream.
type APIError struct {
	Provider string
	Status   int    // HTTP status; 0 for an error event inside a stream
	Type     string // e.g. "overloaded_error", "rate_limit_error"
	Message  string
	// RequestID is the server's request id, when it sent one.
	RequestID string
	// RetryAfter is what retry-after-ms / retry-after asked for, or 0.
	RetryAfter time.Duration
	// ShouldRetry is the server's x-should-retry header: nil when absent.
	ShouldRetry *bool
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s API error", e.Provider)
	if e.Status != 0 {
		msg += fmt.Sprintf(" %d", e.Status)
	}
	if e.Type != "" {
		msg += " " + e.Type
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	if hint := e.Hint(); hint != "" {
		msg += "; " + hint
	}
	return msg
}

// Hint says what the user can do about the error.
func (e *APIError) Hint() string {
	switch e.Status {
	case 401:
		return "check the API key (ANTHROPIC_API_KEY / OPENAI_API_KEY)"
	case 403:
		return "the API key is not allowed to use this model or endpoint"
	case 404:
		return "check the model name and the base URL"
	case 413:
		return "the request is too large; compact the session or send less"
	case 400:
		return "the request was refused as invalid"
	}
	return ""
}

// Retryable reports whether the attempt may be retried: 408, 409, 429, 5xx,
// 529 and error events such as overloaded_error, unless the server said
// x-should-retry.
func (e *APIError) Retryable() bool {
	if e.ShouldRetry != nil {
		return *e.ShouldRetry
	}
	switch {
	case e.Status == 0:
		return e.Type != "invalid_request_error" && e.Type != "authentication_error" && e.Type != "permission_error"
	case e.Status == 408, e.Status == 409, e.Status == 429, e.Status >= 500:
		return true
	}
	return false
}
