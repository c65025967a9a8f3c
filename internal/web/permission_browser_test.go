package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// TestBrowserReloadDuringPermissionPrompt reloads the page while a tool
// waits for permission: the reloaded page shows the prompt from the
// snapshot's pendingPermissions (with the run still going), answering it
// there runs the tool, and the prompt goes when the request is resolved.
func TestBrowserReloadDuringPermissionPrompt(t *testing.T) {
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Running it."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo approved-output"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m2", "The tool said approved-output."),
	)
	st := newStack(t, script, stackOptions{}) // default mode: Bash asks
	tb := newTab(t)
	id := tb.open(st.pageURL())

	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}

	snap := obs.after(func() { tb.send("run a tool") }, has(protocol.MethodPermissionRequest))
	if !snap.Running || len(snap.PendingPermissions) != 1 {
		t.Fatalf("getMessages during the prompt: running %v, pending %+v", snap.Running, snap.PendingPermissions)
	}
	const prompt = `[...document.querySelectorAll('#permissions .permission')]`
	tb.poll("the prompt", prompt+`.length === 1`)
	tb.matches("during the prompt", snap)

	tb.do(chromedp.Reload())
	tb.poll("the reloaded page to attach", `window.sluice && window.sluice.connected()`)
	var again string
	tb.eval(`window.sluice.sessionId()`, &again)
	if again != id {
		t.Fatalf("the reloaded page attached to %q, not %q", again, id)
	}
	tb.matches("the reloaded page", snap)
	tb.poll("the prompt after the reload", prompt+`.length === 1 && `+prompt+`[0].textContent.includes('echo approved-output')`)
	tb.poll("the run state after the reload", `!document.getElementById('run').hidden`)

	snap = obs.after(func() {
		tb.do(chromedp.Click(chromedp.CSS(`.permission button[data-decision="allow"]`)))
	}, idleIn)
	tb.matches("after the answer", snap)
	if !strings.Contains(lastToolResult(snap), "approved-output") {
		t.Errorf("the tool did not run after the answer: %+v", snap.Messages)
	}
	if snap.Running || len(snap.PendingPermissions) != 0 {
		t.Errorf("after the run: running %v, pending %+v", snap.Running, snap.PendingPermissions)
	}
	tb.poll("the prompt to go", prompt+`.length === 0 && document.getElementById('run').hidden`)
}
