package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// Stream posts body to url and hands the answer's body, watched for
// silence (model.WatchBody), to decode, which yields the parts. Errors of
// the request and answers that are not event streams are yielded as they
// are. The connection is released when Stream returns, also when the
// consumer stops early.
func (c *Client) Stream(ctx context.Context, url string, header http.Header, body []byte,
	decode func(r io.Reader, yield func(model.Part, error) bool), yield func(model.Part, error) bool) {
	resp, err := c.Post(ctx, url, header, body)
	if err != nil {
		yield(model.Part{}, err)
		return
	}
	defer resp.Body.Close()
	if err := CheckEventStream(c.Provider, resp); err != nil {
		if e, ok := err.(*model.APIError); ok {
			err = c.Wrap(e)
		}
		yield(model.Part{}, err)
		return
	}
	decode(model.WatchBody(ctx, resp.Body), yield)
}

// ReadEvents reads r's server-sent events and passes each to handle until
// handle reports done or fails. It returns nil when handle said done, and
// otherwise why the stream ended: model.ErrNotEventStream when r held no
// event, model.ErrIncomplete at the end of r before done ("missing" names
// the final event the provider sends), model.ErrEventTooLarge, handle's
// error, or the read error. A last event cut before its closing empty line
// is still handed over: servers have been seen to end that way; when
// handle cannot read it, the stream was cut inside it (ErrIncomplete).
func ReadEvents(r io.Reader, maxEventSize int, provider, missing string, handle func(ev sse.Event) (done bool, err error)) error {
	events := sse.NewDecoder(r, maxEventSize)
	seen := false
	for {
		ev, err := events.Next()
		truncated := errors.Is(err, sse.ErrTruncated)
		switch {
		case err == io.EOF && !seen:
			return fmt.Errorf("%s: %w: the answer held no event", provider, model.ErrNotEventStream)
		case err == io.EOF:
			return fmt.Errorf("%s: %w: no %s", provider, model.ErrIncomplete, missing)
		case errors.Is(err, model.ErrEventTooLarge):
			return fmt.Errorf("%s: %w", provider, err)
		case err != nil && !truncated:
			return fmt.Errorf("%s: reading the stream: %w", provider, err)
		}
		seen = true
		done, err := handle(ev)
		if truncated && err != nil {
			return fmt.Errorf("%s: %w: the stream was cut inside an event", provider, model.ErrIncomplete)
		}
		if err != nil || done {
			return err
		}
	}
}
