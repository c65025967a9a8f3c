package provider

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/internal/provider/bedrock"
	"github.com/sluicehq/sluice/internal/provider/vertex"
	"github.com/sluicehq/sluice/model"
)

// truthy reads a flag variable as Claude Code does.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// openBedrock builds the Bedrock provider from the variables Claude Code
// reads. Those that getenv gives are passed on explicitly; the rest of the
// AWS chain (shared files, SSO, container and instance credentials) reads
// the process environment itself.
func openBedrock(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := bedrock.Config{
		Region:      first(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
		Profile:     getenv("AWS_PROFILE"),
		BearerToken: getenv("AWS_BEARER_TOKEN_BEDROCK"),
		SkipAuth:    truthy(getenv("CLAUDE_CODE_SKIP_BEDROCK_AUTH")),
		BaseURL:     first(cfg.BaseURL, getenv("ANTHROPIC_BEDROCK_BASE_URL")),
		Model:       first(modelName, getenv("ANTHROPIC_MODEL")),
		HTTPClient:  cfg.HTTPClient,
	}
	if key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); key != "" && secret != "" {
		c.Credentials = credentials.NewStaticCredentialsProvider(key, secret, getenv("AWS_SESSION_TOKEN"))
	}
	if err := checkURL("ANTHROPIC_BEDROCK_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p, err := bedrock.New(context.Background(), c)
	if err != nil {
		return nil, "", "", err // it names the provider
	}
	return p, p.Model(), p.BaseURL(), nil
}

// openVertex builds the Vertex AI provider from the variables Claude Code
// reads.
func openVertex(cfg Config, getenv func(string) string, modelName string) (model.Provider, string, string, error) {
	c := vertex.Config{
		ProjectID:       first(getenv("ANTHROPIC_VERTEX_PROJECT_ID"), getenv("GOOGLE_CLOUD_PROJECT")),
		Region:          getenv("CLOUD_ML_REGION"),
		BaseURL:         first(cfg.BaseURL, getenv("ANTHROPIC_VERTEX_BASE_URL")),
		Model:           first(modelName, getenv("ANTHROPIC_MODEL")),
		CredentialsFile: getenv("GOOGLE_APPLICATION_CREDENTIALS"),
		SkipAuth:        truthy(getenv("CLAUDE_CODE_SKIP_VERTEX_AUTH")),
		HTTPClient:      cfg.HTTPClient,
	}
	if err := checkURL("ANTHROPIC_VERTEX_BASE_URL", c.BaseURL); err != nil {
		return nil, "", "", err
	}
	p, err := vertex.New(c)
	if err != nil {
		return nil, "", "", err // it names the provider
	}
	return p, p.Model(), p.BaseURL(), nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
