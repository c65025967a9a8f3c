// Package responses is the provider for OpenAI's Responses API
// (POST /v1/responses), the API of OpenAI's reasoning and Codex models and
// the one Codex CLI speaks. Its stream of typed events (output items, their
// content parts, reasoning summaries, function call arguments, built-in
// tool calls) is translated into the same Anthropic-shaped parts as every
// provider's.
//
// Requests are stateless (store: false): the whole context goes with each
// one, and a reasoning model's reasoning travels as its encrypted_content,
// kept in the session as the reasoning block's signature and sent back as
// a reasoning input item, as Codex CLI does.
package responses

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/model"
)

// Defaults of Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "gpt-5"
)

// Config configures the provider.
type Config struct {
	// APIKey is sent as a bearer token when set.
	APIKey string
	// BaseURL is the API's root, with its /v1: DefaultBaseURL when empty.
	BaseURL string
	// Model is used when a request names none: DefaultModel when empty.
	Model string
	// HTTPClient sends the requests; nil means http.DefaultClient. It
	// should have no overall Timeout: model.Stream's watchdog bounds the
	// silence of a stream instead of its length.
	HTTPClient *http.Client
	// MaxEventSize bounds one stream event: sse.DefaultMaxEventSize when 0.
	MaxEventSize int
}

// String describes the configuration without its secret.
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("openai-responses{base URL %s, model %s, key %s}", c.BaseURL, c.Model, key)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Provider talks to a Responses endpoint. It is safe for concurrent use.
type Provider struct {
	cfg Config
	api httpapi.Client
}

// Name is the provider's name.
const Name = "openai-responses"

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	return &Provider{cfg: cfg, api: httpapi.Client{Provider: Name, HTTP: cfg.HTTPClient, Overflow: overflow}}
}

// Name returns "openai-responses".
func (p *Provider) Name() string { return Name }

// Model is the model used when a request names none.
func (p *Provider) Model() string { return p.cfg.Model }

// overflow recognises the ways the API says that the input does not fit:
// its code, and its message ("Your input exceeds the context window of
// this model").
func overflow(e *model.APIError) bool {
	if e.Type == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "context window") || strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context_length_exceeded")
}

func (p *Provider) header(stream bool) http.Header { return httpapi.BearerJSON(p.cfg.APIKey, stream) }

// Stream sends req once and yields the response's parts; see
// model.Provider. The connection is released when the iterator returns,
// also when the consumer stops early.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		body, err := p.request(req, true)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		p.api.Stream(ctx, p.cfg.BaseURL+"/responses", p.header(true), body, func(r io.Reader, yield func(model.Part, error) bool) {
			decode(r, p.cfg.MaxEventSize, p.api.Wrap, yield)
		}, yield)
	}
}

// Complete sends req without streaming. The answer, a whole response
// object, goes through the same translation as a stream's final event.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := p.request(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.api.Post(ctx, p.cfg.BaseURL+"/responses", p.header(false), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := p.api.Document(ctx, resp)
	if err != nil {
		return nil, err
	}
	if !isResponse(data) {
		return nil, fmt.Errorf("%s: %w: the answer is not a response object: %s", Name, model.ErrMalformedEvent, httpapi.Snippet(data))
	}
	var acc model.Accumulator
	var failed error
	d := decoder{wrap: p.api.Wrap, yield: func(part model.Part, err error) bool {
		if failed == nil {
			failed = acc.Add(part)
		}
		return true
	}}
	if err := d.whole(data); err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, failed
	}
	return acc.Response(), nil
}

// isResponse reports whether a document is a response object: it has its
// output array.
func isResponse(data []byte) bool {
	found := false
	_ = jsonscan.Object(data, func(k, v []byte) error {
		if string(k) == "output" && len(v) > 0 && v[0] == '[' {
			found = true
		}
		return nil
	})
	return found
}
