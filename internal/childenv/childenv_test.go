package childenv

import (
	"slices"
	"testing"
)

func TestSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret bool
	}{
		{"ANTHROPIC_API_KEY", true},
		{"ANTHROPIC_AUTH_TOKEN", true},
		{"OPENAI_API_KEY", true},
		{"GITHUB_TOKEN", true},
		{"GH_TOKEN", true},
		{"NPM_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_SESSION_TOKEN", true},
		{"AWS_ACCESS_KEY_ID", true},
		{"AWS_BEARER_TOKEN_BEDROCK", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"CLIENT_SECRET_FILE", true},
		{"PGPASSWORD", true},
		{"DB_PASSWORD_FILE", true},
		{"MYSQL_PWD_PASSWD", true},
		{"TELEGRAM_BOT_TOKEN", true},
		{"apikey", true},
		{"Stripe_Secret", true},
		{"PATH", false},
		{"HOME", false},
		{"TOKENIZERS_PARALLELISM", false},
		{"KEYTIMEOUT", false},
		{"SSH_AUTH_SOCK", false},
		{"GOFLAGS", false},
		{"TERM", false},
	}
	for _, tt := range tests {
		if got := Secret(tt.name); got != tt.secret {
			t.Errorf("Secret(%q) = %v, want %v", tt.name, got, tt.secret)
		}
	}
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/bin", "GITHUB_TOKEN=ghp_x", "ANTHROPIC_API_KEY=sk-ant", "NPM_TOKEN=npm", "HOME=/h", "SERVER_KEY=old"}
	tests := []struct {
		name     string
		allow    []string
		explicit map[string]string
		want     []string
	}{
		{name: "secrets removed", want: []string{"PATH=/bin", "HOME=/h"}},
		{name: "allowlist", allow: []string{"NPM_TOKEN"}, want: []string{"PATH=/bin", "NPM_TOKEN=npm", "HOME=/h"}},
		{name: "explicit passes and overrides", explicit: map[string]string{"SERVER_KEY": "mine", "B": "2", "A": "1"},
			want: []string{"PATH=/bin", "HOME=/h", "A=1", "B=2", "SERVER_KEY=mine"}},
	}
	for _, tt := range tests {
		if got := Environ(base, tt.allow, tt.explicit); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Environ = %q, want %q", tt.name, got, tt.want)
		}
	}
}
