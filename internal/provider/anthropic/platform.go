package anthropic

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/model"
)

// Amazon Bedrock and Google Vertex AI host the Messages API behind their own
// URLs, credentials and (Bedrock) framing. What follows lets their providers
// build the same request bodies and decode the same events as this one,
// rather than keep copies.

// PlatformBody is the request body for req as a cloud platform takes it:
// the Messages API's, without "model" (the platform names the model in the
// URL) and with version as anthropic_version (the platform reads it from
// the body, not from a header). stream sets "stream": true, which Vertex's
// streamRawPredict wants; Bedrock says it in its URL instead.
func (p *Provider) PlatformBody(req *model.Request, stream bool, version string) ([]byte, error) {
	body, err := p.request(req, stream)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("anthropic: %w: %v", model.ErrInvalidRequest, err)
	}
	delete(fields, "model")
	v, _ := json.Marshal(version)
	fields["anthropic_version"] = v
	body, err = json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w: %v", model.ErrInvalidRequest, err)
	}
	return body, nil
}

// EventDecoder decodes Messages API events handed over one at a time, for a
// transport that frames them otherwise than as server-sent events
// (Bedrock's event stream). It is not safe for concurrent use.
type EventDecoder struct{ d decoder }

// NewEventDecoder returns a decoder whose error events become wrap's
// result.
func NewEventDecoder(wrap func(*model.APIError) error) *EventDecoder {
	return &EventDecoder{decoder{wrap: wrap}}
}

// Event decodes one event, data being its JSON, and yields its parts. It
// returns done after message_stop or when the consumer stopped, and an
// error for an error event (wrap's result) or an event it cannot read
// (wrapping model.ErrMalformedEvent).
func (e *EventDecoder) Event(data []byte, yield func(model.Part, error) bool) (done bool, err error) {
	return e.d.event("", data, yield)
}

// DecodeEvents decodes a Messages API event stream read from r, as Stream
// does: maxEventSize bounds one event (0: the default) and wrap turns error
// events into what is returned.
func DecodeEvents(r io.Reader, maxEventSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	decode(r, maxEventSize, wrap, yield)
}

// Overflow reports whether an API error says that the request does not fit
// the model's context window.
func Overflow(e *model.APIError) bool { return overflow(e) }

// ReadResponse reads a non-streaming Messages API answer.
func ReadResponse(r io.Reader) (*model.Response, error) {
	var w wireResponse
	if err := json.NewDecoder(r).Decode(&w); err != nil {
		return nil, fmt.Errorf("anthropic: %w: reading the answer: %v", model.ErrMalformedEvent, err)
	}
	return w.response()
}
