// Package provider picks and configures the model provider sluice talks to,
// from explicit settings (flags, config) and the environment.
//
// An explicit provider name wins. Otherwise the environment decides, in
// this order: CLAUDE_CODE_USE_BEDROCK → bedrock, CLAUDE_CODE_USE_VERTEX →
// vertex (as Claude Code reads them), ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) → anthropic,
// OPENAI_API_KEY → openai, GEMINI_API_KEY (or GOOGLE_API_KEY) → gemini,
// ANTHROPIC_BASE_URL → anthropic and
// OPENAI_BASE_URL → openai (a local server that needs no key), and with
// OPENAI_WIRE_API=responses (as Codex CLI's wire_api) openai-responses
// instead of openai; and with
// none of them the offline demo, which Open reports so that the CLI can say
// so in one line.
package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/internal/provider/openai"
	"github.com/sluicehq/sluice/internal/provider/responses"
	"github.com/sluicehq/sluice/model"
)

// Provider names.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Demo      = "demo"
	Bedrock   = "bedrock"
	Vertex    = "vertex"
	Gemini    = "gemini"
	// OpenAIResponses is OpenAI's Responses API (/v1/responses).
	OpenAIResponses = responses.Name
)

// Config is what the user set explicitly (flags, a config file); empty
// fields are taken from the environment, then from defaults.
type Config struct {
	// Provider is one of Names; empty picks one from the
	// environment (SLUICE_PROVIDER, then the keys).
	Provider string
	// APIKey overrides ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY.
	APIKey string
	// BaseURL overrides ANTHROPIC_BASE_URL / OPENAI_BASE_URL. Anthropic's
	// is the root (https://api.anthropic.com), OpenAI's includes /v1
	// (http://localhost:11434/v1 for Ollama).
	BaseURL string
	// Model overrides SLUICE_MODEL, ANTHROPIC_MODEL / OPENAI_MODEL and the
	// provider's default.
	Model string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Demo configures the demo provider (its pace).
	Demo demo.Config
	// Betas are Anthropic beta names for the anthropic-beta header
	// (Anthropic's API only).
	Betas []string
}

// String describes the configuration without its secret.
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("provider{%q, base URL %q, model %q, key %s}", c.Provider, c.BaseURL, c.Model, key)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Selection is the provider Open chose, configured.
type Selection struct {
	Provider model.Provider
	// Name is the provider's name; Model the model requests use when they
	// name none; BaseURL where requests go ("" for the demo).
	Name, Model, BaseURL string
	// Notice is set when the demo was chosen because nothing else was
	// configured: one line for the CLI to print.
	Notice string
	// StreamOptions are model.Stream's options as the environment sets them
	// (SLUICE_STREAM_IDLE_TIMEOUT, SLUICE_STREAM_STALL_WARNING,
	// SLUICE_STREAM_MAX_RETRIES); flags may override fields.
	StreamOptions model.StreamOptions
}

// DemoNotice is Selection.Notice when the demo was chosen for want of keys.
const DemoNotice = "No ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY set: using the offline demo model."

// Open chooses and builds the provider for cfg, reading the environment
// through getenv (os.Getenv). Errors say what to set.
func Open(cfg Config, getenv func(string) string) (*Selection, error) {
	opts, err := model.StreamOptionsFromEnv(model.StreamOptions{}, getenv)
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(strings.TrimSpace(cfg.Provider))
	if name == "" {
		name = strings.ToLower(strings.TrimSpace(getenv("SLUICE_PROVIDER")))
	}
	notice := ""
	if name == "" {
		if name = detected(getenv); name == "" {
			name, notice = Demo, DemoNotice
		}
	}
	modelName := first(cfg.Model, getenv("SLUICE_MODEL"))
	sel := &Selection{Name: name, Notice: notice, StreamOptions: opts}
	f, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q: want one of %s", name, strings.Join(Names, ", "))
	}
	sel.Provider, sel.Model, sel.BaseURL, err = f.open(cfg, getenv, modelName)
	if err != nil {
		return nil, err
	}
	return sel, nil
}

// checkURL rejects a base URL that could not work, naming where it came
// from.
func checkURL(source, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("base URL from %s or --base-url does not parse: want http:// or https:// and a host", source)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q (%s or --base-url): want http:// or https:// and a host", u.Redacted(), source)
	}
	return nil
}

// opener builds a provider from cfg and the environment; modelName is the
// model asked for ("": the provider's variable or default). It returns the
// provider, its default model and where its requests go.
type opener func(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error)

func openAnthropic(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := anthropic.Config{
		APIKey:     first(cfg.APIKey, getenv("ANTHROPIC_API_KEY")),
		BaseURL:    first(cfg.BaseURL, getenv("ANTHROPIC_BASE_URL")),
		Model:      first(modelName, getenv("ANTHROPIC_MODEL")),
		HTTPClient: cfg.HTTPClient,
		Betas:      cfg.Betas,
	}
	if c.APIKey == "" {
		// A gateway's bearer token, used only without a key: one
		// credential per request.
		c.AuthToken = getenv("ANTHROPIC_AUTH_TOKEN")
	}
	if c.APIKey == "" && c.AuthToken == "" && c.BaseURL == "" {
		return nil, "", "", fmt.Errorf("provider anthropic: no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a server that needs none)")
	}
	if err := checkURL("ANTHROPIC_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p := anthropic.New(c)
	return p, p.Model(), first(c.BaseURL, anthropic.DefaultBaseURL), nil
}

func openOpenAI(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := openai.Config{
		APIKey:     first(cfg.APIKey, getenv("OPENAI_API_KEY")),
		BaseURL:    first(cfg.BaseURL, getenv("OPENAI_BASE_URL")),
		Model:      first(modelName, getenv("OPENAI_MODEL")),
		HTTPClient: cfg.HTTPClient,
	}
	if c.APIKey == "" && c.BaseURL == "" {
		return nil, "", "", fmt.Errorf("provider openai: no API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server such as Ollama)")
	}
	if err := checkURL("OPENAI_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p := openai.New(c)
	return p, p.Model(), first(c.BaseURL, openai.DefaultBaseURL), nil
}

func openResponses(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := responses.Config{
		APIKey:     first(cfg.APIKey, getenv("OPENAI_API_KEY")),
		BaseURL:    first(cfg.BaseURL, getenv("OPENAI_BASE_URL")),
		Model:      first(modelName, getenv("OPENAI_MODEL")),
		HTTPClient: cfg.HTTPClient,
	}
	if c.APIKey == "" && c.BaseURL == "" {
		return nil, "", "", fmt.Errorf("provider openai-responses: no API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs none)")
	}
	if err := checkURL("OPENAI_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p := responses.New(c)
	return p, p.Model(), first(c.BaseURL, responses.DefaultBaseURL), nil
}

// openDemo is the offline demo; it sends no requests.
func openDemo(cfg Config, _ func(string) string, modelName string) (model.Provider, string, string, error) {
	p := demo.New(cfg.Demo)
	return p, first(modelName, p.Model()), "", nil
}
