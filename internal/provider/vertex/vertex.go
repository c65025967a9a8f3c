// Package vertex is the provider for Anthropic's models on Google Vertex AI:
// streamRawPredict, whose answer is the Messages API's event stream, read
// by the anthropic package's decoder. A model named gemini-* is Google's
// own, asked through streamGenerateContent and read by the gemini
// package's decoder. Requests carry an OAuth access token from Google's
// Application Default Credentials, found by the gcpauth package.
package vertex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/provider/gemini"
	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/vertex/gcpauth"
	"github.com/sluicehq/sluice/model"
)

// Version is the anthropic_version Vertex AI wants in the body.
const Version = "vertex-2023-10-16"

// Config configures the provider. ProjectID and Region are required.
type Config struct {
	// ProjectID is the Google Cloud project (ANTHROPIC_VERTEX_PROJECT_ID).
	ProjectID string
	// Region is the Vertex AI location (CLOUD_ML_REGION): "global" or a
	// region such as "us-east5".
	Region string
	// BaseURL overrides the endpoint up to and including /v1
	// (ANTHROPIC_VERTEX_BASE_URL): https://REGION-aiplatform.googleapis.com/v1,
	// or https://aiplatform.googleapis.com/v1 for "global", when empty.
	BaseURL string
	// Model is the model used when a request names none: a Claude API name
	// (mapped by ModelID) or a Vertex AI model id; anthropic.DefaultModel
	// when empty.
	Model string
	// MaxTokens is used when a request sets none.
	MaxTokens int
	// Credentials authorize the requests; nil detects the Application
	// Default Credentials.
	Credentials gcpauth.TokenSource
	// CredentialsFile, for that detection, is the ADC JSON file to read
	// (GOOGLE_APPLICATION_CREDENTIALS); empty follows Google's search.
	CredentialsFile string
	// SkipAuth sends requests without a token, for a gateway that adds
	// its own (CLAUDE_CODE_SKIP_VERTEX_AUTH); no credentials are looked for.
	SkipAuth bool
	// HTTPClient sends the requests (and the token requests of detected
	// credentials); nil means http.DefaultClient. It should have no
	// overall Timeout.
	HTTPClient *http.Client
	// MaxEventSize bounds one stream event: sse.DefaultMaxEventSize when 0.
	MaxEventSize int
}

// Provider talks to Vertex AI. It is safe for concurrent use.
type Provider struct {
	cfg     Config
	creds   gcpauth.TokenSource
	api     httpapi.Client
	msgs    *anthropic.Provider // builds the bodies
	baseURL string
}

// New returns a provider for cfg. Unless cfg gives credentials, it detects
// the Application Default Credentials (reading files; on Google Cloud, the
// metadata server) and fails when there are none.
func New(cfg Config) (*Provider, error) {
	if cfg.ProjectID == "" {
		return nil, errors.New("vertex: no project: set ANTHROPIC_VERTEX_PROJECT_ID")
	}
	if cfg.Region == "" {
		return nil, errors.New("vertex: no region: set CLOUD_ML_REGION (for example global or us-east5)")
	}
	creds := cfg.Credentials
	if creds == nil && !cfg.SkipAuth {
		// A token is fetched when a request needs one, not by a
		// goroutine of its own.
		c, err := gcpauth.Detect(gcpauth.Options{File: cfg.CredentialsFile, HTTPClient: cfg.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("vertex: no Google credentials (run gcloud auth application-default login, or set GOOGLE_APPLICATION_CREDENTIALS): %w", err)
		}
		creds = c
	}
	if cfg.Model == "" {
		cfg.Model = anthropic.DefaultModel
	}
	base := cfg.BaseURL
	switch {
	case base != "":
	case cfg.Region == "global":
		base = "https://aiplatform.googleapis.com/v1"
	default:
		base = "https://" + cfg.Region + "-aiplatform.googleapis.com/v1"
	}
	return &Provider{
		cfg:     cfg,
		creds:   creds,
		api:     httpapi.Client{Provider: "vertex", HTTP: cfg.HTTPClient, Overflow: overflow, Detail: gemini.Detail},
		msgs:    anthropic.New(anthropic.Config{Model: cfg.Model, MaxTokens: cfg.MaxTokens}),
		baseURL: strings.TrimRight(base, "/"),
	}, nil
}

// Name returns "vertex".
func (p *Provider) Name() string { return "vertex" }

// Model is the model used when a request names none, as configured.
func (p *Provider) Model() string { return p.cfg.Model }

// BaseURL is where the requests go.
func (p *Provider) BaseURL() string { return p.baseURL }

// overflow recognises a prompt too long for a Claude or a Gemini model.
func overflow(e *model.APIError) bool { return anthropic.Overflow(e) || gemini.Overflow(e) }

// modelName is the model req asks.
func (p *Provider) modelName(req *model.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return p.cfg.Model
}

// isGemini reports whether name is one of Google's models, served by the
// google publisher's generateContent methods.
func isGemini(name string) bool { return strings.HasPrefix(name, "gemini-") }

// url is the endpoint of method ("streamRawPredict", "rawPredict",
// "streamGenerateContent?alt=sse", "generateContent") for the model.
func (p *Provider) url(name, method string) string {
	publisher := "anthropic"
	if isGemini(name) {
		publisher = "google"
	}
	return p.baseURL + "/projects/" + url.PathEscape(p.cfg.ProjectID) + "/locations/" + url.PathEscape(p.cfg.Region) +
		"/publishers/" + publisher + "/models/" + url.PathEscape(ModelID(name)) + ":" + method
}

// header carries the access token. A failure to get one is not retried:
// what the token endpoint refused it will refuse again.
func (p *Provider) header(ctx context.Context, accept string) (http.Header, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	if p.cfg.SkipAuth {
		return h, nil
	}
	tok, err := p.creds.Token(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("vertex: %w: no Google access token: %v", model.ErrInvalidRequest, err)
	}
	h.Set("Authorization", "Bearer "+tok.Value)
	return h, nil
}

// wrap names this provider in the error events the decoder reads.
func (p *Provider) wrap(e *model.APIError) error {
	e.Provider = "vertex"
	return p.api.Wrap(e)
}

// Stream sends req once and yields the response's parts; see
// model.Provider.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		name := p.modelName(req)
		method := "streamRawPredict"
		decode := func(r io.Reader, yield func(model.Part, error) bool) {
			anthropic.DecodeEvents(r, p.cfg.MaxEventSize, p.wrap, yield)
		}
		var body []byte
		var err error
		if isGemini(name) {
			method = "streamGenerateContent?alt=sse"
			decode = func(r io.Reader, yield func(model.Part, error) bool) {
				gemini.DecodeEvents(r, p.cfg.MaxEventSize, "vertex", p.api.Wrap, yield)
			}
			body, err = gemini.Body(req, name)
		} else {
			body, err = p.msgs.PlatformBody(req, true, Version)
		}
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		h, err := p.header(ctx, "text/event-stream")
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		p.api.Stream(ctx, p.url(name, method), h, body, decode, yield)
	}
}

// Complete sends req without streaming (rawPredict, or generateContent
// for a Gemini model).
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	name := p.modelName(req)
	gem := isGemini(name)
	var body []byte
	var err error
	if gem {
		body, err = gemini.Body(req, name)
	} else {
		body, err = p.msgs.PlatformBody(req, false, Version)
	}
	if err != nil {
		return nil, err
	}
	h, err := p.header(ctx, "application/json")
	if err != nil {
		return nil, err
	}
	method := "rawPredict"
	if gem {
		method = "generateContent"
	}
	resp, err := p.api.Post(ctx, p.url(name, method), h, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !gem {
		return anthropic.ReadResponse(resp.Body)
	}
	data, err := p.api.Document(ctx, resp)
	if err != nil {
		return nil, err
	}
	return gemini.ReadResponse(data, "vertex", p.api.Wrap)
}

// String describes the configuration, naming the credentials only by where
// they come from: printed whole they would show a private key.
func (c Config) String() string {
	creds := "detected"
	if c.Credentials != nil {
		creds = "given"
	}
	return fmt.Sprintf("vertex{project %q, region %q, base URL %q, model %q, credentials %s}", c.ProjectID, c.Region, c.BaseURL, c.Model, creds)
}

// GoString is String.
func (c Config) GoString() string { return c.String() }
