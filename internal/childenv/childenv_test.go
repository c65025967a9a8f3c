package childenv

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
		secret      bool
	}{
		{"ANTHROPIC_API_KEY", "x", true},
		{"ANTHROPIC_AUTH_TOKEN", "x", true},
		{"GITHUB_TOKEN", "x", true},
		{"AWS_SECRET_ACCESS_KEY", "x", true},
		{"AWS_ACCESS_KEY_ID", "x", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/k.json", true},
		{"PGPASSWORD", "x", true},
		{"PGPASSFILE", "/etc/sluice/pgpass", true},
		{"NATS_CREDS", "/etc/sluice/node.creds", true},
		{"MY_SERVICE_PASS", "x", true},
		{"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T/B/x", true},
		{"apikey", "x", true},
		{"Stripe_Secret", "x", true},
		{"DATABASE_URL", "postgres://u:pw@db:5432/app", true},
		{"REDIS", "redis://:pw@cache/0", true},
		{"UPSTREAMS", "a=http://x b=https://bob:hunter2@y/path", true},
		{"PG_CONN", "host=db user=u password=pw dbname=x", true},
		{"PG_CONN2", "host=db password = 'pw'", true},
		{"DATABASE_URL", "postgres://u@db:5432/app", false},
		{"HTTP_PROXY", "http://proxy:3128", false},
		{"GOPROXY", "https://proxy.golang.org,direct", false},
		{"NOTE", "mailto:a@b", false},
		{"PATH", "/usr/bin:/bin", false},
		{"HOME", "/root", false},
		{"SSH_AUTH_SOCK", "/tmp/agent", false},
		{"TERM", "xterm", false},
	}
	for _, tt := range tests {
		if got := Secret(tt.name, tt.value); got != tt.secret {
			t.Errorf("Secret(%q, %q) = %v, want %v", tt.name, tt.value, got, tt.secret)
		}
	}
}

func TestPolicyEnviron(t *testing.T) {
	t.Parallel()
	base := []string{
		"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=ghp_x", "DATABASE_URL=postgres://u:pw@db/x", "MY_SERVICE_PASS=p",
		"SLACK_WEBHOOK_URL=https://hooks/x", "EDITOR=vi", "GOFLAGS=-mod=mod", "SERVER_KEY=old", "LANG=C.UTF-8",
	}
	tests := []struct {
		name     string
		p        Policy
		explicit map[string]string
		want     []string
	}{
		{name: "default: secrets by name and value removed",
			want: []string{"PATH=/bin", "HOME=/h", "EDITOR=vi", "GOFLAGS=-mod=mod", "LANG=C.UTF-8"}},
		{name: "include overrides the default excludes", p: Policy{Include: []string{"github_token", "DATABASE_*"}},
			want: []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=ghp_x", "DATABASE_URL=postgres://u:pw@db/x", "EDITOR=vi", "GOFLAGS=-mod=mod", "LANG=C.UTF-8"}},
		{name: "exclude by pattern", p: Policy{Exclude: []string{"go*", "EDIT?R"}},
			want: []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8"}},
		{name: "include overrides exclude", p: Policy{Exclude: []string{"*"}, Include: []string{"EDITOR"}},
			want: []string{"EDITOR=vi"}},
		{name: "inherit core", p: Policy{Inherit: InheritCore},
			want: []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8"}},
		{name: "inherit core plus an include", p: Policy{Inherit: InheritCore, Include: []string{"GOFLAGS"}},
			want: []string{"PATH=/bin", "HOME=/h", "GOFLAGS=-mod=mod", "LANG=C.UTF-8"}},
		{name: "inherit none with set", p: Policy{Inherit: InheritNone, Set: map[string]string{"B": "2", "A": "1"}},
			want: []string{"A=1", "B=2"}},
		{name: "include only", p: Policy{IncludeOnly: []string{"PATH", "*TOKEN"}},
			want: []string{"PATH=/bin"}},
		{name: "ignore default excludes", p: Policy{IgnoreDefaultExcludes: true, Exclude: []string{"*WEBHOOK*"}},
			want: []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=ghp_x", "DATABASE_URL=postgres://u:pw@db/x", "MY_SERVICE_PASS=p", "EDITOR=vi", "GOFLAGS=-mod=mod", "SERVER_KEY=old", "LANG=C.UTF-8"}},
		{name: "set and explicit pass and override", p: Policy{Set: map[string]string{"EDITOR": "nano", "X": "policy"}},
			explicit: map[string]string{"SERVER_KEY": "mine", "X": "server"},
			want:     []string{"PATH=/bin", "HOME=/h", "GOFLAGS=-mod=mod", "LANG=C.UTF-8", "EDITOR=nano", "SERVER_KEY=mine", "X=server"}},
	}
	for _, tt := range tests {
		if err := tt.p.Check(); err != nil {
			t.Errorf("%s: Check: %v", tt.name, err)
		}
		if got := tt.p.Environ(base, tt.explicit); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Environ =\n %q, want\n %q", tt.name, got, tt.want)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{{Inherit: "some"}, {Exclude: []string{"[A"}}, {Include: []string{"\\"}}} {
		if p.Check() == nil {
			t.Errorf("Check(%+v) = nil, want an error", p)
		}
	}
}

// FuzzEnviron checks that under the default policy no value with a URL
// password, and no name matching the default excludes, reaches a child.
func FuzzEnviron(f *testing.F) {
	f.Add("DATABASE_URL", "postgres://u:pw@db/x")
	f.Add("X", "host=db password=pw")
	f.Add("PATH", "/bin")
	f.Fuzz(func(t *testing.T, name, value string) {
		if strings.Contains(name, "=") {
			return
		}
		for _, kv := range (Policy{}).Environ([]string{name + "=" + value}, nil) {
			n, v, _ := strings.Cut(kv, "=")
			if Secret(n, v) || passwordURL().MatchString(v) {
				t.Fatalf("%q passed", kv)
			}
		}
	})
}

// BenchmarkEnviron is the cost each new session pays for its tools'
// environment, with an environment of 60 variables.
func BenchmarkEnviron(b *testing.B) {
	var base []string
	for i := range 60 {
		base = append(base, fmt.Sprintf("SOME_VARIABLE_%d=/usr/local/lib/value/%d", i, i))
	}
	base = append(base, "DATABASE_URL=postgres://u:pw@db/x", "GITHUB_TOKEN=x")
	p := Policy{Include: []string{"GOPATH"}, Exclude: []string{"AWS_*"}}
	for b.Loop() {
		p.Environ(base, nil)
	}
}
