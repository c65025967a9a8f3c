package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/cli"
)

// TestRelayProvider: the relay's sluice backend picks its provider as
// every face does (cli.AgentFlags.Setup), and never falls back to the demo
// unasked.
func TestRelayProvider(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, provider, model string
		env                   map[string]string
		wantName, wantModel   string
		wantErr               string
	}{
		{name: "ANTHROPIC_MODEL", env: map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "claude-x"}, wantName: "anthropic", wantModel: "claude-x"},
		{name: "flag beats env", model: "m2", env: map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "claude-x"}, wantName: "anthropic", wantModel: "m2"},
		{name: "openai from its key", env: map[string]string{"OPENAI_API_KEY": "k", "OPENAI_MODEL": "gpt-x"}, wantName: "openai", wantModel: "gpt-x"},
		{name: "bad base URL", env: map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "localhost:8080"}, wantErr: "want http:// or https://"},
		{name: "no keys", env: map[string]string{}, wantErr: "--provider demo"},
		{name: "demo asked for", provider: "demo", env: map[string]string{}, wantName: "demo", wantModel: "demo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			af := cli.AgentFlags{Provider: tt.provider, Model: tt.model, WorkDir: t.TempDir()}
			setup, err := relayAgent(t.Context(), &af, func(k string) string { return tt.env[k] }, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer setup.Close()
			sel := setup.Selection
			if sel.Name != tt.wantName || sel.Model != tt.wantModel {
				t.Errorf("got %s %s, want %s %s", sel.Name, sel.Model, tt.wantName, tt.wantModel)
			}
		})
	}
}
