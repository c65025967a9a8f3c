package provider

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/gemini"
	"github.com/sluicehq/sluice/model"
)

// geminiKey is the Gemini API key the environment gives: GEMINI_API_KEY,
// else GOOGLE_API_KEY (the names Google's SDKs and Gemini CLI read).
func geminiKey(getenv func(string) string) string {
	return first(getenv("GEMINI_API_KEY"), getenv("GOOGLE_API_KEY"))
}

// openGemini builds the Gemini API provider: the key, GEMINI_BASE_URL
// (the root, without /v1beta) and GEMINI_MODEL.
func openGemini(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := gemini.Config{
		APIKey:     first(cfg.APIKey, geminiKey(getenv)),
		BaseURL:    first(cfg.BaseURL, getenv("GEMINI_BASE_URL")),
		Model:      first(modelName, getenv("GEMINI_MODEL")),
		HTTPClient: cfg.HTTPClient,
	}
	if c.APIKey == "" && c.BaseURL == "" {
		return nil, "", "", fmt.Errorf("provider gemini: no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
	}
	if err := checkURL("GEMINI_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p := gemini.New(c)
	return p, p.Model(), p.BaseURL(), nil
}
