// Package openai is the provider for OpenAI Chat Completions and the servers
// that speak it: DeepSeek (reasoning_content), Qwen, Ollama, vLLM, llama.cpp
// server, OpenRouter and others. Their streams are translated into the same
// Anthropic-shaped parts as every provider's, with their quirks absorbed:
// tool calls without ids or with repeated indices, zero-argument tools,
// usage in the finish chunk or in a chunk of its own, text and tool deltas
// in one chunk, reasoning under either field name.
package openai

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/model"
)

// Defaults of Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "gpt-4.1"
)

// Config configures the provider. Servers that need no key (Ollama, a
// local llama.cpp or vLLM) take an empty APIKey.
type Config struct {
	// APIKey is sent as a bearer token when set.
	APIKey string
	// BaseURL is the API's root, with its /v1 (http://localhost:11434/v1
	// for Ollama): DefaultBaseURL when empty.
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
	return fmt.Sprintf("openai{base URL %s, model %s, key %s}", c.BaseURL, c.Model, key)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Provider talks to a Chat Completions endpoint. It is safe for concurrent
// use.
type Provider struct {
	cfg Config
	api httpapi.Client
	// official is true for api.openai.com, whose newer models take
	// max_completion_tokens and refuse max_tokens; compatible servers take
	// max_tokens.
	official bool
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
	u, _ := url.Parse(cfg.BaseURL)
	return &Provider{
		cfg:      cfg,
		api:      httpapi.Client{Provider: "openai", HTTP: cfg.HTTPClient, Overflow: overflow},
		official: u != nil && u.Hostname() == "api.openai.com",
	}
}

// Name returns "openai".
func (p *Provider) Name() string { return "openai" }

// Model is the model used when a request names none.
func (p *Provider) Model() string { return p.cfg.Model }

// overflow recognises the ways servers say that the prompt does not fit:
// OpenAI's code, vLLM's and others' messages, llama.cpp's type.
func overflow(e *model.APIError) bool {
	if e.Type == "context_length_exceeded" || e.Type == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "maximum context length") || strings.Contains(m, "context_length_exceeded") ||
		strings.Contains(m, "exceeds the available context size") || strings.Contains(m, "prompt is too long") ||
		strings.Contains(m, "context window")
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
		p.api.Stream(ctx, p.cfg.BaseURL+"/chat/completions", p.header(true), body, func(r io.Reader, yield func(model.Part, error) bool) {
			decode(r, p.cfg.MaxEventSize, p.api.Wrap, yield)
		}, yield)
	}
}

// Complete sends req without streaming. The answer goes through the same
// translation as a stream's chunks, as one chunk.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := p.request(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.api.Post(ctx, p.cfg.BaseURL+"/chat/completions", p.header(false), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := p.api.Document(ctx, resp)
	if err != nil {
		return nil, err
	}
	if !hasChoices(data) {
		return nil, fmt.Errorf("openai: %w: the answer holds no choices: %s", model.ErrMalformedEvent, httpapi.Snippet(data))
	}
	var acc model.Accumulator
	var failed error
	t := translator{wrap: p.api.Wrap, yield: func(part model.Part, err error) bool {
		if failed == nil {
			failed = acc.Add(part)
		}
		return true
	}}
	if err := t.chunk(data); err != nil {
		return nil, err
	}
	if err := t.done(); err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, failed
	}
	return acc.Response(), nil
}

// hasChoices reports whether a chat completion document has its choices.
func hasChoices(data []byte) bool {
	found := false
	_ = jsonscan.Object(data, func(k, v []byte) error {
		if string(k) == "choices" && len(v) > 0 && v[0] == '[' {
			found = true
		}
		return nil
	})
	return found
}
