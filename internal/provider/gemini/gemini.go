// Package gemini is the provider for Google's Gemini API
// (generativelanguage.googleapis.com): streamGenerateContent with
// alt=sse, whose chunks are GenerateContentResponses. Thought summaries
// become reasoning, function calls tool calls, and the thoughtSignatures
// the API attaches to parts are kept on the blocks they came with and sent
// back on the same parts, as Gemini 3 requires for function calling. The
// decoder and request builder also serve Gemini models on Vertex AI (see
// package vertex).
package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/model"
)

// Defaults of Config.
const (
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	DefaultModel   = "gemini-2.5-pro"
)

// Config configures the provider.
type Config struct {
	// APIKey is sent in the x-goog-api-key header, never in the URL.
	APIKey string
	// BaseURL is the API's root, without /v1beta: DefaultBaseURL when
	// empty.
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
	return fmt.Sprintf("gemini{base URL %s, model %s, key %s}", c.BaseURL, c.Model, key)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Provider talks to the Gemini API. It is safe for concurrent use.
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
	return &Provider{cfg: cfg, api: httpapi.Client{Provider: "gemini", HTTP: cfg.HTTPClient, Overflow: Overflow, Detail: Detail}}
}

// Name returns "gemini".
func (p *Provider) Name() string { return "gemini" }

// Model is the model used when a request names none.
func (p *Provider) Model() string { return p.cfg.Model }

// BaseURL is where the requests go.
func (p *Provider) BaseURL() string { return p.cfg.BaseURL }

func (p *Provider) modelName(req *model.Request) string {
	if req.Model != "" {
		return strings.TrimPrefix(req.Model, "models/")
	}
	return strings.TrimPrefix(p.cfg.Model, "models/")
}

// url is the endpoint of method for the model.
func (p *Provider) url(name, method string) string {
	return p.cfg.BaseURL + "/v1beta/models/" + url.PathEscape(name) + ":" + method
}

func (p *Provider) header(accept string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	if p.cfg.APIKey != "" {
		h.Set("x-goog-api-key", p.cfg.APIKey)
	}
	return h
}

// Stream sends req once and yields the response's parts; see
// model.Provider. The connection is released when the iterator returns,
// also when the consumer stops early.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		name := p.modelName(req)
		body, err := Body(req, name)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		p.api.Stream(ctx, p.url(name, "streamGenerateContent?alt=sse"), p.header("text/event-stream"), body, func(r io.Reader, yield func(model.Part, error) bool) {
			DecodeEvents(r, p.cfg.MaxEventSize, "gemini", p.api.Wrap, yield)
		}, yield)
	}
}

// Complete sends req without streaming (generateContent). The answer goes
// through the same translation as a stream's chunks, as one chunk.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	name := p.modelName(req)
	body, err := Body(req, name)
	if err != nil {
		return nil, err
	}
	resp, err := p.api.Post(ctx, p.url(name, "generateContent"), p.header("application/json"), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := p.api.Document(ctx, resp)
	if err != nil {
		return nil, err
	}
	return ReadResponse(data, "gemini", p.api.Wrap)
}

// ReadResponse translates a whole GenerateContentResponse, the answer to
// generateContent, into a response. One that does not finish (no
// candidate with a finishReason, no blocked prompt) is malformed.
func ReadResponse(data []byte, provider string, wrap func(*model.APIError) error) (*model.Response, error) {
	var acc model.Accumulator
	var failed error
	t := newTranslator(provider, wrap, func(part model.Part, err error) bool {
		if failed == nil {
			failed = acc.Add(part)
		}
		return true
	})
	done, err := t.chunk(data)
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("%s: %w: the answer has no finishReason: %s", provider, model.ErrMalformedEvent, httpapi.Snippet(data))
	}
	if failed != nil {
		return nil, failed
	}
	return acc.Response(), nil
}

// Overflow recognises Google's answer to a prompt that does not fit: "The
// input token count (N) exceeds the maximum number of tokens allowed (M)."
func Overflow(e *model.APIError) bool {
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "input token count") && strings.Contains(m, "exceeds the maximum number of tokens")
}

// maxRetryDelay bounds the wait a RetryInfo may ask for.
const maxRetryDelay = time.Hour

// Detail reads the retry delay Google gives in an error body's details
// (google.rpc.RetryInfo, {"retryDelay":"37s"}) rather than in a header.
func Detail(body []byte, e *model.APIError) {
	var doc struct {
		Error struct {
			Details []json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return
	}
	for _, d := range doc.Error.Details {
		var typ, delay []byte
		_ = jsonscan.Object(d, func(k, v []byte) error {
			switch string(k) {
			case "@type":
				typ = v
			case "retryDelay":
				delay = v
			}
			return nil
		})
		if !strings.HasSuffix(string(typ), `google.rpc.RetryInfo"`) || e.RetryAfter > 0 {
			continue
		}
		s, _ := jsonscan.String(delay)
		if d, err := time.ParseDuration(s); err == nil && d > 0 && d <= maxRetryDelay {
			e.RetryAfter = d
		}
	}
}
