package main

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// TestBashChildEnvironment runs the built binary (-p) with a model that
// calls Bash `env`: the command must not see the secrets by name or by
// value (a DATABASE_URL carrying a password), but must see PATH and HOME
// and the variables included by the settings file and by a flag, and the
// one the flag sets.
func TestBashChildEnvironment(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var result string
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		if r.ToolResult != "" {
			mu.Lock()
			result = r.ToolResult
			mu.Unlock()
			return fakemodel.Answer{Text: []string{"done"}}
		}
		return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "t1", Name: "Bash", Input: map[string]any{"command": "env"}}}
	})
	defer fm.Close()
	home := t.TempDir()
	conf := home + "/config.json"
	if err := os.WriteFile(conf, []byte(`{"childEnv": {"include": ["DEPLOY_TOKEN"], "exclude": ["SLUICE_TEST_HIDDEN_*"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testbin.Sluice(t), "-p", "show the environment", "--dangerously-skip-permissions",
		"--child-env-include", "SERVICE_API_KEY", "--child-env-set", "SLUICE_TEST_SET=given")
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "SLUICE_HOME=" + home, "SLUICE_CONFIG=" + conf,
		"ANTHROPIC_API_KEY=sk-ant-SECRET-VALUE", "ANTHROPIC_BASE_URL=" + fm.URL(),
		"DATABASE_URL=postgres://app:SECRET-VALUE@db:5432/app",
		"MY_SERVICE_PASS=SECRET-VALUE",
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0/B0/SECRET-VALUE",
		"PG_CONN=host=db password=SECRET-VALUE",
		"SLUICE_TEST_HIDDEN_X=SECRET-VALUE",
		"DEPLOY_TOKEN=included-by-settings",
		"SERVICE_API_KEY=included-by-flag",
		"SLUICE_TEST_PLAIN=plain",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice -p: %v\n%s", err, out)
	}
	mu.Lock()
	env := result
	mu.Unlock()
	if env == "" {
		t.Fatalf("the model got no tool result; sluice printed:\n%s", out)
	}
	if strings.Contains(env, "SECRET-VALUE") {
		t.Errorf("a secret reached Bash:\n%s", env)
	}
	for _, want := range []string{"\nPATH=/usr/local/bin:/usr/bin:/bin", "\nHOME=" + home, "\nDEPLOY_TOKEN=included-by-settings",
		"\nSERVICE_API_KEY=included-by-flag", "\nSLUICE_TEST_SET=given", "\nSLUICE_TEST_PLAIN=plain"} {
		if !strings.Contains("\n"+env, want) {
			t.Errorf("Bash's environment lacks %q:\n%s", want[1:], env)
		}
	}
}
