package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/model/modeltest"
)

// TestHooksOfTheSessionsProject: a session gets the command hooks of the
// project it opens in (the client's cwd), run there; a UserPromptSubmit
// hook's plain stdout reaches the model.
func TestHooksOfTheSessionsProject(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Hi."), modeltest.Stop("end_turn")))
	var asked []string
	h := newHarness(t, p, harnessOpts{hooks: func(cwd string) (agent.Hooks, error) {
		asked = append(asked, cwd)
		return hooks.ForProject("", cwd, childenv.Policy{}, nil)
	}})
	settings := `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"cat > heard.json; echo from-the-hook"}]}]}}`
	if err := os.MkdirAll(filepath.Join(h.work(), ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.work(), ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if _, err := h.prompt(sess.SessionId, "hello"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != h.work() {
		t.Errorf("hooks asked for %q, want [%s]", asked, h.work())
	}
	heard, err := os.ReadFile(filepath.Join(h.work(), "heard.json"))
	if err != nil || !strings.Contains(string(heard), `"prompt":"hello"`) {
		t.Errorf("the hook heard %q (%v)", heard, err)
	}
	if c := p.Request(0).Messages[0].Content; len(c) != 2 || c[1].Text != "from-the-hook" {
		t.Errorf("the model got %+v", c)
	}
}
