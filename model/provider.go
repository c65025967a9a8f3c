package model

import (
	"context"
	"iter"
)

// Provider talks to one model API.
type Provider interface {
	// Name is the provider's name ("anthropic", "openai", "demo").
	Name() string
	// Stream sends req once and yields the response's parts in order. It
	// yields a non-nil error at most once, as its last value: an *APIError,
	// ErrIncomplete, ErrNotEventStream, a network error or ctx's error.
	// A consumer that stops early (break) releases the connection; the
	// iterator may be ranged over only once. Once ctx is done, Stream must
	// return promptly (Stream in this package waits for it). A provider
	// that reads an HTTP body wraps it with WatchBody so that the
	// watchdog sees the answer arrive and its size is bounded.
	Stream(ctx context.Context, req *Request) iter.Seq2[Part, error]
	// Complete sends req without streaming (the fallback after repeated
	// streaming failures). Its body, too, is read through WatchBody.
	Complete(ctx context.Context, req *Request) (*Response, error)
}
