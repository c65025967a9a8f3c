// Package anthropic is the Anthropic Messages API provider.
//
// Requests are built and stream events decoded by hand, over net/http,
// rather than through the official SDK: the decoder is exact where the SDK's
// is not (bare CR line ends, an event cut at the end of the body) and does a
// fraction of the work per event (see the benchmark beside the tests).
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/model"
)

// Defaults of Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultModel     = "claude-sonnet-4-6"
	DefaultMaxTokens = 32000
	apiVersion       = "2023-06-01"
)

// Config configures the provider. Only APIKey (or AuthToken) is required.
type Config struct {
	// APIKey is sent as x-api-key.
	APIKey string
	// AuthToken, for gateways that want one, is sent as a bearer token.
	AuthToken string
	// BaseURL is the API's root, without /v1: DefaultBaseURL when empty.
	BaseURL string
	// Model is used when a request names none: DefaultModel when empty.
	Model string
	// MaxTokens is used when a request sets none: DefaultMaxTokens when 0.
	MaxTokens int
	// HTTPClient sends the requests; nil means http.DefaultClient. It
	// should have no overall Timeout: model.Stream's watchdog bounds the
	// silence of a stream instead of its length.
	HTTPClient *http.Client
	// MaxEventSize bounds one stream event: sse.DefaultMaxEventSize when 0.
	MaxEventSize int
	// Betas are sent in the anthropic-beta header of every request
	// (Claude Code's --betas).
	Betas []string
}

// String describes the configuration without its secrets.
func (c Config) String() string {
	return fmt.Sprintf("anthropic{base URL %s, model %s, key %s}", c.BaseURL, c.Model, redact(c.APIKey+c.AuthToken))
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

func redact(key string) string {
	if key == "" {
		return "unset"
	}
	return "set"
}

// Provider talks to the Messages API. It is safe for concurrent use.
type Provider struct {
	cfg Config
	api httpapi.Client
}

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	return &Provider{cfg: cfg, api: httpapi.Client{Provider: "anthropic", HTTP: cfg.HTTPClient, Overflow: overflow}}
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Model is the model used when a request names none.
func (p *Provider) Model() string { return p.cfg.Model }

// overflow recognises "prompt is too long: 201234 tokens > 200000 maximum"
// and its relatives.
func overflow(e *model.APIError) bool {
	if e.Status != http.StatusBadRequest && e.Status != 0 {
		return false
	}
	m := strings.ToLower(e.Message + " " + e.Type)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "model_context_window_exceeded") ||
		strings.Contains(m, "exceeds the context window") || strings.Contains(m, "context window exceeded")
}

// effortBeta is the beta that the effort level (output_config.effort)
// is sent under, as Claude Code sends it.
const effortBeta = "effort-2025-11-24"

func (p *Provider) header(stream bool, req *model.Request) http.Header {
	h := http.Header{}
	betas := slices.Clone(p.cfg.Betas)
	if req.Effort != "" && !slices.Contains(betas, effortBeta) {
		betas = append(betas, effortBeta)
	}
	if len(betas) > 0 {
		h.Set("anthropic-beta", strings.Join(betas, ","))
	}
	h.Set("Content-Type", "application/json")
	h.Set("anthropic-version", apiVersion)
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if p.cfg.APIKey != "" {
		h.Set("x-api-key", p.cfg.APIKey)
	}
	if p.cfg.AuthToken != "" {
		h.Set("Authorization", "Bearer "+p.cfg.AuthToken)
	}
	return h
}

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
		p.api.Stream(ctx, p.cfg.BaseURL+"/v1/messages", p.header(true, req), body, func(r io.Reader, yield func(model.Part, error) bool) {
			decode(r, p.cfg.MaxEventSize, p.api.Wrap, yield)
		}, yield)
	}
}

// Complete sends req without streaming.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := p.request(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.api.Post(ctx, p.cfg.BaseURL+"/v1/messages", p.header(false, req), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := p.api.Document(ctx, resp)
	if err != nil {
		return nil, err
	}
	return parseMessage(data)
}

// parseMessage reads a non-streaming answer: a message, or
// ErrMalformedEvent for any other document.
func parseMessage(data []byte) (*model.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("anthropic: %w: reading the answer: %v: %s", model.ErrMalformedEvent, err, httpapi.Snippet(data))
	}
	if w.Type != "message" && w.Content == nil {
		return nil, fmt.Errorf("anthropic: %w: the answer is not a message: %s", model.ErrMalformedEvent, httpapi.Snippet(data))
	}
	return w.response()
}
