package provider

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		cfg             Config
		env             map[string]string
		provider, model string
		baseURL, notice string
		wantErr         string
	}{
		{"nothing set: demo", Config{}, nil, Demo, "demo", "", DemoNotice, ""},
		{"anthropic key", Config{}, map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "o"}, Anthropic, "claude-sonnet-4-6", "https://api.anthropic.com", "", ""},
		{"anthropic auth token", Config{}, map[string]string{"ANTHROPIC_AUTH_TOKEN": "t"}, Anthropic, "claude-sonnet-4-6", "https://api.anthropic.com", "", ""},
		{"openai key", Config{}, map[string]string{"OPENAI_API_KEY": "o", "OPENAI_MODEL": "gpt-x"}, OpenAI, "gpt-x", "https://api.openai.com/v1", "", ""},
		{"local openai server without key", Config{}, map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, OpenAI, "gpt-4.1", "http://localhost:11434/v1", "", ""},
		{"local anthropic server without key", Config{}, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, Anthropic, "claude-sonnet-4-6", "http://127.0.0.1:8080", "", ""},
		{"explicit wins", Config{Provider: "OpenAI", Model: "qwen3", BaseURL: "http://h:1/v1"}, map[string]string{"ANTHROPIC_API_KEY": "k", "SLUICE_MODEL": "x"}, OpenAI, "qwen3", "http://h:1/v1", "", ""},
		{"OPENAI_WIRE_API=responses", Config{}, map[string]string{"OPENAI_API_KEY": "o", "OPENAI_WIRE_API": "responses"}, OpenAIResponses, "gpt-5", "https://api.openai.com/v1", "", ""},
		{"OPENAI_WIRE_API=responses, local server", Config{}, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_WIRE_API": "Responses", "OPENAI_MODEL": "gpt-5-codex"}, OpenAIResponses, "gpt-5-codex", "http://127.0.0.1:9/v1", "", ""},
		{"OPENAI_WIRE_API=chat", Config{}, map[string]string{"OPENAI_API_KEY": "o", "OPENAI_WIRE_API": "chat"}, OpenAI, "gpt-4.1", "https://api.openai.com/v1", "", ""},
		{"explicit openai-responses", Config{Provider: "openai-responses"}, map[string]string{"OPENAI_API_KEY": "o"}, OpenAIResponses, "gpt-5", "https://api.openai.com/v1", "", ""},
		{"explicit openai-responses without key", Config{Provider: "openai-responses"}, nil, "", "", "", "", "set OPENAI_API_KEY"},
		{"SLUICE_PROVIDER", Config{}, map[string]string{"SLUICE_PROVIDER": "demo", "ANTHROPIC_API_KEY": "k"}, Demo, "demo", "", "", ""},
		{"SLUICE_MODEL over ANTHROPIC_MODEL", Config{}, map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "a", "SLUICE_MODEL": "s"}, Anthropic, "s", "https://api.anthropic.com", "", ""},
		{"gemini key", Config{}, map[string]string{"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "x", "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, Gemini, "gemini-2.5-pro", "https://generativelanguage.googleapis.com", "", ""},
		{"google key, gemini model", Config{}, map[string]string{"GOOGLE_API_KEY": "x", "GEMINI_MODEL": "gemini-2.5-flash"}, Gemini, "gemini-2.5-flash", "https://generativelanguage.googleapis.com", "", ""},
		{"other keys before gemini's", Config{}, map[string]string{"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "o"}, OpenAI, "gpt-4.1", "https://api.openai.com/v1", "", ""},
		{"explicit gemini, local server", Config{Provider: "gemini"}, map[string]string{"GEMINI_BASE_URL": "http://127.0.0.1:9/"}, Gemini, "gemini-2.5-pro", "http://127.0.0.1:9", "", ""},
		{"explicit gemini without key", Config{Provider: "gemini"}, map[string]string{"OPENAI_API_KEY": "o"}, "", "", "", "", "set GEMINI_API_KEY"},
		{"unknown", Config{Provider: "nope"}, nil, "", "", "", "", `unknown provider "nope": want one of anthropic, openai, openai-responses, bedrock, vertex, gemini, demo`},
		{"explicit anthropic without key", Config{Provider: "anthropic"}, map[string]string{"OPENAI_API_KEY": "o"}, "", "", "", "", "set ANTHROPIC_API_KEY"},
		{"explicit openai without key", Config{Provider: "openai"}, nil, "", "", "", "", "set OPENAI_API_KEY"},
		{"bad base URL", Config{}, map[string]string{"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": "localhost:11434"}, "", "", "", "", "OPENAI_BASE_URL"},
		{"bad idle timeout", Config{}, map[string]string{"SLUICE_STREAM_IDLE_TIMEOUT": "sixty"}, "", "", "", "", "SLUICE_STREAM_IDLE_TIMEOUT"},
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
			if sel.Name != tt.provider || sel.Provider.Name() != tt.provider || sel.Model != tt.model || sel.BaseURL != tt.baseURL || sel.Notice != tt.notice {
				t.Fatalf("got %s %s %s %q", sel.Name, sel.Model, sel.BaseURL, sel.Notice)
			}
		})
	}
}

func TestStreamOptionsFromEnv(t *testing.T) {
	t.Parallel()
	sel, err := Open(Config{}, env(map[string]string{"SLUICE_STREAM_IDLE_TIMEOUT": "2m", "SLUICE_STREAM_STALL_WARNING": "5s"}))
	if err != nil {
		t.Fatal(err)
	}
	if sel.StreamOptions.IdleTimeout != 2*time.Minute || sel.StreamOptions.StallWarning != 5*time.Second {
		t.Fatalf("%+v", sel.StreamOptions)
	}
}

func TestConfigHidesKey(t *testing.T) {
	t.Parallel()
	c := Config{APIKey: "sk-hidden"}
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "hidden") {
			t.Fatal(s)
		}
	}
	if _, err := Open(Config{BaseURL: "ftp://user:sk-hidden@host"}, env(map[string]string{"OPENAI_API_KEY": "o"})); err == nil || strings.Contains(err.Error(), "sk-hidden") {
		t.Fatalf("err = %v", err)
	}
}

// End to end: the selected provider streams from a local server named by
// the environment, as print mode will.
func TestLocalServers(t *testing.T) {
	t.Parallel()
	script := func(format, answer string) *fakemodel.Script {
		t.Helper()
		replies, err := fakemodel.ParseReplies([]string{"say:" + answer})
		if err != nil {
			t.Fatal(err)
		}
		s, err := fakemodel.NewScript(format, replies)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	anth := script(fakemodel.Anthropic, "from anthropic")
	oai := script(fakemodel.OpenAI, "from openai")

	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"ANTHROPIC_BASE_URL": anth.URL, "ANTHROPIC_API_KEY": "sk-a"}, "from anthropic"},
		{map[string]string{"OPENAI_BASE_URL": oai.URL}, "from openai"},
		{nil, "Welcome to the sluice demo"},
	} {
		sel, err := Open(Config{Demo: demoNoDelay}, env(tt.env))
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
		if got := acc.Response().Content[0].Text; !strings.HasPrefix(got, tt.want) {
			t.Fatalf("%s: got %q", sel.Name, got)
		}
	}
	for _, r := range anth.Requests() {
		if gotKey := r.Header.Get("x-api-key"); gotKey != "sk-a" {
			t.Fatalf("key %q", gotKey)
		}
	}
	for _, r := range oai.Requests() {
		if gotAuth := r.Header.Get("Authorization"); gotAuth != "" {
			t.Fatalf("authorization %q", gotAuth)
		}
	}
}

var demoNoDelay = demo.Config{Delay: -1}
