// Package bedrock is the provider for Anthropic's models on Amazon Bedrock:
// InvokeModelWithResponseStream, whose answer is an AWS event stream of
// "chunk" events, each carrying one Messages API event (base64 JSON) that
// the anthropic package decodes.
//
// Requests are signed with SigV4 from the standard AWS credential chain
// (environment, shared config and credentials files, SSO, web identity,
// container and instance credentials: package awsauth), or carry a
// Bedrock API key as a bearer token. Only aws-sdk-go-v2's credential
// types, signer and event-stream packages are used: no service client.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/provider/bedrock/awsauth"
	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/model"
)

// Version is the anthropic_version Bedrock wants in the body.
const Version = "bedrock-2023-05-31"

// signingName is Bedrock's SigV4 service name.
const signingName = "bedrock"

// Config configures the provider; every field is optional.
type Config struct {
	// Region is the AWS region; empty takes the chain's (AWS_REGION,
	// AWS_DEFAULT_REGION, the profile's region).
	Region string
	// Profile is the shared-config profile (AWS_PROFILE); empty is the
	// chain's choice.
	Profile string
	// Credentials signs the requests; nil loads the standard AWS
	// credential chain.
	Credentials aws.CredentialsProvider
	// BearerToken, a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), is sent
	// instead of a signature when set.
	BearerToken string
	// SkipAuth sends requests unsigned, for a gateway that signs them
	// itself (CLAUDE_CODE_SKIP_BEDROCK_AUTH).
	SkipAuth bool
	// BaseURL overrides the endpoint (ANTHROPIC_BEDROCK_BASE_URL):
	// https://bedrock-runtime.REGION.amazonaws.com when empty.
	BaseURL string
	// Model is the model used when a request names none: a Claude API name
	// (mapped by ModelID) or a Bedrock id; anthropic.DefaultModel when
	// empty.
	Model string
	// MaxTokens is used when a request sets none.
	MaxTokens int
	// HTTPClient sends the requests; nil means http.DefaultClient. It
	// should have no overall Timeout (model.Stream's watchdog bounds the
	// silence of a stream instead).
	HTTPClient *http.Client
	// MaxFrameSize bounds one event-stream frame: DefaultMaxFrameSize when
	// 0.
	MaxFrameSize int
}

// String describes the configuration without its secrets.
func (c Config) String() string {
	token := "unset"
	if c.BearerToken != "" {
		token = "set"
	}
	return fmt.Sprintf("bedrock{region %q, profile %q, base URL %q, model %q, API key %s}", c.Region, c.Profile, c.BaseURL, c.Model, token)
}

// GoString is String, so that %#v does not print the token either.
func (c Config) GoString() string { return c.String() }

// Provider talks to Bedrock. It is safe for concurrent use.
type Provider struct {
	cfg     Config
	creds   aws.CredentialsProvider
	signer  *v4.Signer
	api     httpapi.Client
	msgs    *anthropic.Provider // builds the bodies
	baseURL string
	now     func() time.Time
}

// New returns a provider for cfg. Unless cfg gives both credentials and a
// region, it loads the AWS shared configuration (files and environment; no
// network), and fails when that is broken or names no region.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	creds := cfg.Credentials
	if cfg.BearerToken == "" && creds == nil && !cfg.SkipAuth || cfg.Region == "" {
		region, chain, err := awsauth.Load(ctx, awsauth.Options{Region: cfg.Region, Profile: cfg.Profile, HTTPClient: cfg.HTTPClient,
			RegionOnly: cfg.BearerToken != "" || creds != nil || cfg.SkipAuth})
		switch {
		case errors.Is(err, awsauth.ErrNoRegion):
			return nil, errors.New("bedrock: no AWS region: set AWS_REGION (or a region in the AWS profile)")
		case err != nil:
			return nil, fmt.Errorf("bedrock: loading the AWS configuration: %w", err)
		}
		cfg.Region = region
		if creds == nil {
			creds = chain
		}
	}
	if cfg.Model == "" {
		cfg.Model = anthropic.DefaultModel
	}
	base := cfg.BaseURL
	if base == "" {
		base = "https://bedrock-runtime." + cfg.Region + ".amazonaws.com"
	}
	p := &Provider{
		cfg:     cfg,
		creds:   creds,
		signer:  v4.NewSigner(),
		msgs:    anthropic.New(anthropic.Config{Model: cfg.Model, MaxTokens: cfg.MaxTokens}),
		baseURL: strings.TrimRight(base, "/"),
		now:     time.Now,
	}
	p.api = httpapi.Client{Provider: "bedrock", HTTP: cfg.HTTPClient, Overflow: overflow}
	return p, nil
}

// Name returns "bedrock".
func (p *Provider) Name() string { return "bedrock" }

// Model is the model used when a request names none, as configured (a
// Claude API name or a Bedrock id).
func (p *Provider) Model() string { return p.cfg.Model }

// BaseURL is where the requests go.
func (p *Provider) BaseURL() string { return p.baseURL }

// Region is the AWS region the requests are signed for.
func (p *Provider) Region() string { return p.cfg.Region }

// overflow adds Bedrock's own wording ("Input is too long for requested
// model") to the Messages API's.
func overflow(e *model.APIError) bool {
	return anthropic.Overflow(e) ||
		(e.Status == http.StatusBadRequest || e.Status == 0) && strings.Contains(strings.ToLower(e.Message), "input is too long")
}

// url is the endpoint of action ("invoke", "invoke-with-response-stream")
// for req's model. The id is one path segment: an ARN's "/" is escaped.
func (p *Provider) url(req *model.Request, action string) string {
	name := req.Model
	if name == "" {
		name = p.cfg.Model
	}
	return p.baseURL + "/model/" + url.PathEscape(ModelID(name, p.cfg.Region)) + "/" + action
}

// Stream sends req once and yields the response's parts; see
// model.Provider.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		body, err := p.msgs.PlatformBody(req, false, Version)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		resp, err := p.post(ctx, p.url(req, "invoke-with-response-stream"), body)
		if err != nil {
			yield(model.Part{}, err)
			return
		}
		defer resp.Body.Close()
		if err := httpapi.CheckEventStream("bedrock", resp); err != nil {
			yield(model.Part{}, err)
			return
		}
		decode(model.WatchBody(ctx, resp.Body), p.cfg.MaxFrameSize, p.api.Wrap, yield)
	}
}

// Complete sends req without streaming (InvokeModel).
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := p.msgs.PlatformBody(req, false, Version)
	if err != nil {
		return nil, err
	}
	resp, err := p.post(ctx, p.url(req, "invoke"), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return anthropic.ReadResponse(resp.Body)
}

// post sends body, signed, and returns a 2xx response or the error answer
// as an *model.APIError.
func (p *Provider) post(ctx context.Context, endpoint string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("bedrock: %w: %v", model.ErrInvalidRequest, err)
	}
	// The answer's body is JSON, in event-stream frames or not: Bedrock
	// reads the wanted type from X-Amzn-Bedrock-Accept.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Amzn-Bedrock-Accept", "application/json")
	if err := p.authorize(ctx, req, body); err != nil {
		return nil, err
	}
	client := p.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("bedrock: %w", err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, p.errorAnswer(resp)
}

// authorize signs req (SigV4 over the body's hash) or sets the API key. A
// failure to get credentials is not retried: another attempt would find
// the same chain.
func (p *Provider) authorize(ctx context.Context, req *http.Request, body []byte) error {
	switch {
	case p.cfg.SkipAuth:
		return nil
	case p.cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+p.cfg.BearerToken)
		return nil
	}
	creds, err := p.creds.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("bedrock: %w: no AWS credentials (the standard chain: AWS_ACCESS_KEY_ID, AWS_PROFILE, SSO, container or instance role): %v", model.ErrInvalidRequest, err)
	}
	sum := sha256.Sum256(body)
	if err := p.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), signingName, p.cfg.Region, p.now()); err != nil {
		return fmt.Errorf("bedrock: %w: signing: %v", model.ErrInvalidRequest, err)
	}
	return nil
}

// errorAnswer is httpapi's reading of an error answer, completed with what
// AWS says in headers: the exception's name (x-amzn-ErrorType) and the
// request id.
func (p *Provider) errorAnswer(resp *http.Response) error {
	err := p.api.Error(resp)
	var e *model.APIError
	if errors.As(err, &e) {
		if t, _, _ := strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":"); t != "" && e.Type == "" {
			e.Type = t
		}
		if e.RequestID == "" {
			e.RequestID = resp.Header.Get("X-Amzn-RequestId")
		}
		retryPolicy(e)
	}
	return err
}

// retryPolicy settles, by the exception's name, what its status alone
// would get wrong: a model stream error (424) may pass on another attempt;
// a refused request, inside a stream (status 0, retried by default), will
// not.
func retryPolicy(e *model.APIError) {
	var retry bool
	switch strings.ToLower(e.Type) {
	case "modelstreamerrorexception":
		retry = true
	case "validationexception", "accessdeniedexception", "resourcenotfoundexception",
		"unrecognizedclientexception", "servicequotaexceededexception", "modelerrorexception":
		retry = false
	default:
		return
	}
	e.ShouldRetry = &retry
}
