package cli

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/sluicehq/sluice/internal/natstest"
)

// TestNATSCredentials connects to NATS servers that require a password,
// a token or an nkey, with the credentials in the environment as
// NATSOptions reads them: each connects with its own and is refused
// without.
func TestNATSCredentials(t *testing.T) {
	t.Parallel()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	dir := t.TempDir()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, conf string
		env        map[string]string
	}{
		{"password", `authorization { users: [{user: node, password: "pw-1"}] }`, map[string]string{"NATS_USER": "node", "NATS_PASSWORD": "pw-1"}},
		{"token", `authorization { token: "tok-1" }`, map[string]string{"NATS_TOKEN": "tok-1"}},
		{"nkey", `authorization { users: [{nkey: ` + pub + `}] }`, map[string]string{"NATS_NKEY": seedFile}},
	}
	for _, tt := range tests {
		conf := filepath.Join(dir, tt.name+".conf")
		if err := os.WriteFile(conf, []byte(tt.conf), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := natstest.StartConfig(conf, filepath.Join(dir, tt.name), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, with := range []bool{true, false} {
			env := map[string]string{}
			if with {
				env = tt.env
			}
			var f ClusterFlags
			opts, err := f.NATSOptions(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			nc, err := nats.Connect(s.ClientURL(), opts...)
			if err == nil {
				nc.Close()
			}
			if (err == nil) != with {
				t.Errorf("%s, credentials given %v: connect error %v", tt.name, with, err)
			}
		}
		s.Shutdown()
		s.WaitForShutdown()
	}
}
