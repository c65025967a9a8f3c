package cli

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"nats://nats:4222", "nats://nats:4222"},
		{"nats://u:pw@nats:4222", "nats://u:xxxxx@nats:4222"},
		{"nats://a:1@n1:4222,nats://b:2@n2:4222", "nats://a:xxxxx@n1:4222,nats://b:xxxxx@n2:4222"},
		{"nats://tok@nats:4222", "nats://xxxxx@nats:4222"}, // a token
		{"postgres://sluice@db/x", "postgres://sluice@db/x"},
		{"postgres://sluice:pw@db/sluice?sslmode=disable", "postgres://sluice:xxxxx@db/sluice?sslmode=disable"},
		{"host=db user=sluice password=pw dbname=x", "host=db user=sluice password=xxxxx dbname=x"},
		{"host=db password='p w' dbname=x", "host=db password=xxxxx dbname=x"},
		{"password=pw host=db", "password=xxxxx host=db"},
		{"host=db user=sluice", "host=db user=sluice"},
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClusterResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsnFile := filepath.Join(dir, "pg")
	if err := os.WriteFile(dsnFile, []byte("postgres://u:pw@db/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		clustered bool
		postgres  string
		creds     string
		err       string
	}{
		{name: "single process"},
		{name: "flags", args: []string{"--nats", "nats://n", "--postgres", "postgres://u@db/x"}, clustered: true, postgres: "postgres://u@db/x"},
		{name: "postgres file", args: []string{"--nats", "nats://n", "--postgres-file", dsnFile}, clustered: true, postgres: "postgres://u:pw@db/x"},
		{name: "PG variables", args: []string{"--nats", "nats://n"}, env: map[string]string{"PGHOST": "db"}, clustered: true},
		{name: "NATS_CREDS", args: []string{"--nats", "nats://n", "--postgres", "x"}, env: map[string]string{"NATS_CREDS": "/n.creds"}, clustered: true, postgres: "x", creds: "/n.creds"},
		{name: "flag over NATS_CREDS", args: []string{"--nats", "nats://n", "--postgres", "x", "--nats-creds", "/f.creds"}, env: map[string]string{"NATS_CREDS": "/n.creds"}, clustered: true, postgres: "x", creds: "/f.creds"},
		{name: "nats without postgres", args: []string{"--nats", "nats://n"}, err: "PG* variables"},
		{name: "postgres without nats", args: []string{"--postgres", "x"}, err: "needs --nats"},
		{name: "both postgres flags", args: []string{"--nats", "n", "--postgres", "x", "--postgres-file", dsnFile}, err: "not both"},
		{name: "empty postgres file", args: []string{"--nats", "n", "--postgres-file", empty}, err: "empty"},
		{name: "missing postgres file", args: []string{"--nats", "n", "--postgres-file", filepath.Join(dir, "none")}, err: "no such file"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var f ClusterFlags
		f.Register(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"SLUICE_CONFIG": filepath.Join(dir, "none.json")}
		for k, v := range tt.env {
			env[k] = v
		}
		clustered, err := f.Resolve(func(k string) string { return env[k] })
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want one with %q", tt.name, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case clustered != tt.clustered || f.Postgres != tt.postgres || f.NATSCreds != tt.creds:
			t.Errorf("%s: clustered %v postgres %q creds %q, want %v %q %q", tt.name, clustered, f.Postgres, f.NATSCreds, tt.clustered, tt.postgres, tt.creds)
		}
	}
}

func TestWarnCommandLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--nats", "nats://n", "--postgres", "postgres://u@db/x"}, false},
		{[]string{"--nats", "nats://u:secret1@n", "--postgres", "postgres://u@db/x"}, true},
		{[]string{"--nats", "nats://secret1@n", "--postgres", "postgres://u@db/x"}, true},
		{[]string{"--nats", "nats://n", "--postgres", "postgres://u:secret1@db/x"}, true},
		{[]string{"--nats", "nats://n", "--postgres", "host=db password=secret1"}, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var f ClusterFlags
		f.Register(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		f.WarnCommandLine(slog.New(slog.NewTextHandler(&buf, nil)))
		if got := strings.Contains(buf.String(), "holds a password"); got != tt.warn {
			t.Errorf("%q: warned %v, want %v: %s", tt.args, got, tt.warn, buf.String())
		}
		if strings.Contains(buf.String(), "secret1") {
			t.Errorf("%q: the warning shows the password: %s", tt.args, buf.String())
		}
	}
}
