// Package providertest holds what the providers' tests share: test servers
// that deliver a body whole or one byte per write, fail on cue or reset
// the connection, and helpers that run model.Stream with recorded backoff.
package providertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/model"
)

// ServeSSE writes body as an event stream, whole or one byte per write
// (flushed, so that every byte boundary is a read boundary).
func ServeSSE(w http.ResponseWriter, body []byte, oneByte bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if !oneByte {
		w.Write(body)
		return
	}
	f := w.(http.Flusher)
	for i := range body {
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		f.Flush()
	}
}

// Attempts serves the n-th request with the n-th handler (418 past the
// last) and counts the requests.
func Attempts(handlers ...http.HandlerFunc) (http.HandlerFunc, *atomic.Int32) {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(handlers) {
			http.Error(w, "no more attempts", http.StatusTeapot)
			return
		}
		handlers[i](w, r)
	}, &n
}

// ResetAfter writes the first n bytes of body as a 200 event stream, then
// resets the connection (TCP RST).
func ResetAfter(body string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:n])
		buf.Flush()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
}

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
