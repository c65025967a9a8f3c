package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		pos  []string
		p    bool
		out  string
	}{
		{[]string{"-p", "hello world", "--output-format", "json"}, []string{"hello world"}, true, "json"},
		{[]string{"hello", "-p", "there"}, []string{"hello", "there"}, true, "text"},
		{[]string{"--", "-p", "x"}, []string{"-p", "x"}, false, "text"},
		{nil, nil, false, "text"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		p := fs.Bool("p", false, "")
		out := fs.String("output-format", "text", "")
		pos, err := ParseInterspersed(fs, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(pos, tt.pos) || *p != tt.p || *out != tt.out {
			t.Errorf("%q: pos %q p %v out %q", tt.args, pos, *p, *out)
		}
	}
}

// TestSetupPrecedence: settings file < environment < flags.
func TestSetupPrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.json")
	os.WriteFile(conf, []byte(`{"provider":"demo","model":"from-config","permissionMode":"acceptEdits",
		"maxTurns":7,"stallWarning":"3s","streamIdleTimeout":"30s","autoCompact":0.5}`), 0o600)
	t.Setenv("SLUICE_HOME", dir)
	env := map[string]string{"SLUICE_CONFIG": conf, "SLUICE_STREAM_IDLE_TIMEOUT": "45s"}
	getenv := func(k string) string { return env[k] }

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f AgentFlags
	f.Register(fs)
	if err := fs.Parse([]string{"--max-turns", "3", "--cwd", dir}); err != nil {
		t.Fatal(err)
	}
	s, err := f.Setup(getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options
	if s.Selection.Name != "demo" || o.Model != "from-config" || o.PermissionMode != protocol.ModeAcceptEdits {
		t.Errorf("config not applied: provider %s model %s mode %s", s.Selection.Name, o.Model, o.PermissionMode)
	}
	if o.MaxTurns != 3 {
		t.Errorf("flag did not override the config: max turns %d", o.MaxTurns)
	}
	if o.Stream.StallWarning != 3*time.Second || o.Stream.IdleTimeout != 45*time.Second {
		t.Errorf("stream options %v %v: want the config's warning and the environment's timeout", o.Stream.StallWarning, o.Stream.IdleTimeout)
	}
	if o.AutoCompact != 0.5 {
		t.Errorf("auto compact %v", o.AutoCompact)
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(conf, []byte(`{"provdier":"demo"}`), 0o600)
	if _, err := LoadConfig(conf); err == nil {
		t.Fatal("a misspelt setting was accepted")
	}
	if c, err := LoadConfig(filepath.Join(t.TempDir(), "none.json")); err != nil || !reflect.DeepEqual(c, Config{}) {
		t.Fatalf("missing file: %+v %v", c, err)
	}
}

func TestSkipPermissionsConflicts(t *testing.T) {
	t.Setenv("SLUICE_HOME", t.TempDir())
	f := AgentFlags{SkipPermissions: true, PermissionMode: "plan", Provider: "demo"}
	if _, err := f.Setup(func(string) string { return "" }, nil); err == nil {
		t.Fatal("--dangerously-skip-permissions with --permission-mode plan was accepted")
	}
}
