// Package providertest holds what the providers' tests share besides their
// fake servers (fakemodel's fault handlers): helpers that run model.Stream
// with recorded backoff, accumulate its parts and watch the client's reads.
package providertest

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/model"
)

// StreamAll runs model.Stream for req, recording the backoff waits instead
// of sleeping them, and returns the parts and the final error.
func StreamAll(t testing.TB, p model.Provider, req *model.Request, opts model.StreamOptions) (parts []model.Part, waits []time.Duration, err error) {
	t.Helper()
	opts.Sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	opts.Jitter = func() float64 { return 0 }
	for part, e := range model.Stream(t.Context(), p, req, opts) {
		if e != nil {
			err = e
			continue
		}
		parts = append(parts, part)
	}
	return parts, waits, err
}

// Attempt runs one attempt of p, without model.Stream.
func Attempt(t testing.TB, p model.Provider, req *model.Request) ([]model.Part, error) {
	t.Helper()
	var parts []model.Part
	for part, err := range p.Stream(t.Context(), req) {
		if err != nil {
			return parts, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// Accumulate builds the response parts make, failing t on a part that does
// not fit.
func Accumulate(t testing.TB, parts []model.Part) *model.Response {
	t.Helper()
	var acc model.Accumulator
	for _, p := range parts {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return acc.Response()
}

// Retries returns the PartRetry details among parts.
func Retries(parts []model.Part) []*model.Retry {
	var out []*model.Retry
	for _, p := range parts {
		if p.Type == model.PartRetry {
			out = append(out, p.Retry)
		}
	}
	return out
}

// NotifyTransport reports every chunk the client reads from a response on
// Reads (dropped when nobody waits), so that a test moves a fake clock
// only once the decoder has the bytes.
type NotifyTransport struct {
	RT    http.RoundTripper
	Reads chan<- string
}

func (t NotifyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RT.RoundTrip(r)
	if err == nil {
		resp.Body = notifyBody{resp.Body, t.Reads}
	}
	return resp, err
}

type notifyBody struct {
	io.ReadCloser
	reads chan<- string
}

func (b notifyBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		select {
		case b.reads <- string(p[:n]):
		default: // nobody waits for these bytes
		}
	}
	return n, err
}
