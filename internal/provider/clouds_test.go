package provider

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/model"
)

// Claude Code's variables choose and configure the cloud platforms.
func TestOpenClouds(t *testing.T) {
	t.Parallel()
	adc := serviceAccountFile(t)
	aws := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	gcp := map[string]string{"ANTHROPIC_VERTEX_PROJECT_ID": "proj", "CLOUD_ML_REGION": "global", "GOOGLE_APPLICATION_CREDENTIALS": adc}
	tests := []struct {
		name                  string
		cfg                   Config
		env                   map[string]string
		provider, model, base string
		wantErr               string
	}{
		{"CLAUDE_CODE_USE_BEDROCK over an API key", Config{}, with(aws, "CLAUDE_CODE_USE_BEDROCK", "1", "ANTHROPIC_API_KEY", "k"), Bedrock, "claude-sonnet-4-6", "https://bedrock-runtime.eu-west-1.amazonaws.com", ""},
		{"bedrock model and endpoint", Config{}, with(aws, "CLAUDE_CODE_USE_BEDROCK", "true", "ANTHROPIC_MODEL", "eu.anthropic.claude-opus-4-6-v1", "ANTHROPIC_BEDROCK_BASE_URL", "http://127.0.0.1:9"), Bedrock, "eu.anthropic.claude-opus-4-6-v1", "http://127.0.0.1:9", ""},
		{"--provider bedrock with an API key", Config{Provider: "bedrock"}, map[string]string{"AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "tok"}, Bedrock, "claude-sonnet-4-6", "https://bedrock-runtime.us-east-1.amazonaws.com", ""},
		{"bad bedrock URL", Config{}, with(aws, "CLAUDE_CODE_USE_BEDROCK", "1", "ANTHROPIC_BEDROCK_BASE_URL", "bedrock.local"), "", "", "", "ANTHROPIC_BEDROCK_BASE_URL"},
		{"CLAUDE_CODE_USE_VERTEX", Config{}, with(gcp, "CLAUDE_CODE_USE_VERTEX", "1"), Vertex, "claude-sonnet-4-6", "https://aiplatform.googleapis.com/v1", ""},
		{"--provider vertex, regional, SLUICE_MODEL", Config{Provider: "vertex"}, with(gcp, "CLOUD_ML_REGION", "us-east5", "SLUICE_MODEL", "claude-opus-4-5"), Vertex, "claude-opus-4-5", "https://us-east5-aiplatform.googleapis.com/v1", ""},
		{"vertex without project", Config{}, with(gcp, "CLAUDE_CODE_USE_VERTEX", "1", "ANTHROPIC_VERTEX_PROJECT_ID", ""), "", "", "", "ANTHROPIC_VERTEX_PROJECT_ID"},
		{"vertex without region", Config{Provider: "vertex"}, with(gcp, "CLOUD_ML_REGION", ""), "", "", "", "CLOUD_ML_REGION"},
		{"CLAUDE_CODE_USE_VERTEX=0 is off", Config{}, with(gcp, "CLAUDE_CODE_USE_VERTEX", "0"), Demo, "demo", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := Open(tt.cfg, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.Name != tt.provider || sel.Provider.Name() != tt.provider || sel.Model != tt.model || sel.BaseURL != tt.base {
				t.Fatalf("got %s %s %s", sel.Name, sel.Model, sel.BaseURL)
			}
		})
	}
}

// End to end through the picker: CLAUDE_CODE_USE_BEDROCK with the endpoint
// at a local server that speaks Bedrock's event stream.
func TestBedrockLocalServer(t *testing.T) {
	t.Parallel()
	var body []byte
	for _, ev := range []string{
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"from bedrock"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
		`{"type":"message_stop"}`,
	} {
		body = append(body, fakemodel.BedrockChunk([]byte(ev))...)
	}
	rec := fakemodel.Record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeBedrock(w, body, false) }))
	srv := httptest.NewServer(rec)
	defer srv.Close()
	sel, err := Open(Config{}, env(map[string]string{
		"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDLOCAL", "AWS_SECRET_ACCESS_KEY": "local-secret",
		"ANTHROPIC_BEDROCK_BASE_URL": srv.URL,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for part, err := range model.Stream(t.Context(), sel.Provider, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}}, sel.StreamOptions) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(part)
	}
	if got := acc.Response().Content[0].Text; got != "from bedrock" {
		t.Fatalf("got %q", got)
	}
	for _, r := range rec.Requests() {
		if auth, path := r.Header.Get("Authorization"), r.URL.Path; !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDLOCAL/") || strings.Contains(auth, "local-secret") || path != "/model/us.anthropic.claude-sonnet-4-6/invoke-with-response-stream" {
			t.Fatalf("authorization %q, path %q", auth, path)
		}
	}
}

// End to end through the picker: CLAUDE_CODE_USE_VERTEX with the endpoint at
// a local server, behind a gateway that authenticates for its clients
// (CLAUDE_CODE_SKIP_VERTEX_AUTH: no credentials looked for, no token sent).
func TestVertexLocalServer(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for _, ev := range []string{
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"from vertex"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
		`{"type":"message_stop"}`,
	} {
		body.WriteString("data: " + ev + "\n\n")
	}
	rec := fakemodel.Record(fakemodel.SSE(body.String()))
	srv := httptest.NewServer(rec)
	defer srv.Close()
	sel, err := Open(Config{}, env(map[string]string{
		"CLAUDE_CODE_USE_VERTEX": "1", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "proj", "CLOUD_ML_REGION": "us-east5",
		"ANTHROPIC_VERTEX_BASE_URL": srv.URL + "/v1", "ANTHROPIC_MODEL": "claude-haiku-4-5",
		"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(t.TempDir(), "absent.json"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for part, err := range model.Stream(t.Context(), sel.Provider, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}}, sel.StreamOptions) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(part)
	}
	if got := acc.Response().Content[0].Text; got != "from vertex" {
		t.Fatalf("got %q", got)
	}
	for _, r := range rec.Requests() {
		if auth, path := r.Header.Values("Authorization"), r.URL.Path; len(auth) != 0 || path != "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict" {
			t.Fatalf("authorization %q, path %q", auth, path)
		}
	}
}

// serviceAccountFile writes an ADC file; nothing asks its token endpoint
// for a token in these tests.
func serviceAccountFile(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": "k",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sa@proj.iam.gserviceaccount.com", "token_uri": "http://127.0.0.1:1/token",
	})
	path := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
