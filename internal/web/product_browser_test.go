package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

const helloGo = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}"

// TestBrowserProduct walks the page as a new user would, in one tab: the
// first screen (where, which model, example prompts), a highlighted code
// block and the copy buttons (the clipboard holds what they copied), the
// session's title from its first prompt, the session list (no empty
// session, times, search), the approval state of a tool call, the rewind
// confirmation, and the banner of a lost connection, which goes when the
// page has resumed from its last seq with no event lost or doubled.
func TestBrowserProduct(t *testing.T) {
	answer := "Here it is:\n\n```go\n" + helloGo + "\n```\n\nRun it with `go run .`."
	script := modeltest.NewScript(
		modeltest.Answer("o1", "Fixed."), // another session's, answered first
		modeltest.Answer("m1", answer),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Listing."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo listed"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m3", "Listed."),
		modeltest.Answer("m4", "While you were away."),
	)
	st := newStack(t, script, stackOptions{model: "claude-test-1"})
	ctx := context.Background()

	// Sessions of the same project: one used, one opened and never used.
	other := dial(t, ctx, st.wsURL(), nil)
	var oinit wire.InitializeResult
	if err := other.call(ctx, "initialize", map[string]any{}, &oinit); err != nil {
		t.Fatal(err)
	}
	(&observer{client: other, sessionID: oinit.SessionID}).after(func() {
		other.send(ctx, "sendMessage", map[string]any{"text": "fix the flaky test\nin the store package"})
	}, idleIn)
	unused := dial(t, ctx, st.wsURL(), nil)
	if err := unused.call(ctx, "initialize", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}

	tb := newTab(t)
	if _, err := chromedp.CallBrowser(tb.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: st.base,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(tb.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-write", AllowWithoutSanitization: true}, Setting: browser.PermissionSettingGranted, Origin: st.base,
	}); err != nil {
		t.Fatal(err)
	}
	tb.focus()
	id := tb.open(st.pageURL())
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}

	// The first screen.
	var first struct {
		Welcome, Messages bool
		Where, Title      string
		Examples          []string
	}
	tb.eval(`(() => ({
	  welcome: !document.getElementById('welcome').hidden,
	  messages: !document.getElementById('messages').hidden,
	  where: document.getElementById('welcome-where').textContent,
	  title: document.getElementById('session-title').textContent,
	  examples: [...document.querySelectorAll('#examples button')].map((b) => b.dataset.prompt),
	}))()`, &first)
	if !first.Welcome || first.Messages || first.Title != "New session" || len(first.Examples) != 3 ||
		!strings.Contains(first.Where, init.WorkingDirectory) || !strings.Contains(first.Where, "claude-test-1") {
		t.Errorf("the first screen: %+v (working directory %q)", first, init.WorkingDirectory)
	}
	tb.do(chromedp.Click(chromedp.CSS(`#examples button:nth-child(2)`)))
	tb.poll("the example in the input box", `document.getElementById('input').value === `+jsString(first.Examples[1]))

	// A first prompt of two lines names the session; the answer's code is
	// highlighted.
	snap := obs.after(func() { tb.send("\n  Show me a Go hello world  \nwith a main function") }, idleIn)
	tb.matches("after the first answer", snap)
	tb.poll("the title from the first prompt", `document.getElementById('session-title').textContent === 'Show me a Go hello world' &&
	  document.title.startsWith('Show me a Go hello world') && document.getElementById('welcome').hidden`)
	var hl struct {
		Lang     bool
		Keywords []string
		Strings  []string
	}
	tb.eval(`(() => { const c = document.querySelector('.codeblock pre.code code.hljs');
	  return { lang: c.classList.contains('language-go'),
	    keywords: [...c.querySelectorAll('.hljs-keyword')].map((e) => e.textContent),
	    strings: [...c.querySelectorAll('.hljs-string')].map((e) => e.textContent) }; })()`, &hl)
	if !hl.Lang || !contains(hl.Keywords, "package") || !contains(hl.Keywords, "func") || !contains(hl.Strings, `"hello"`) {
		t.Errorf("the code block is not highlighted as Go: %+v", hl)
	}

	// The copy buttons put the code, then the whole answer, on the
	// clipboard.
	tb.do(chromedp.Click(chromedp.CSS(`.codeblock .code-head button.copy`)))
	tb.poll("the code's copy to say so", `document.querySelector('.codeblock .code-head button.copy').textContent === 'Copied'`)
	if got := tb.clipboard(); got != helloGo {
		t.Errorf("the code's copy button copied %q, want %q", got, helloGo)
	}
	tb.do(chromedp.Click(chromedp.CSS(`article.msg.assistant .msg-actions button.copy-answer`)))
	tb.poll("the answer's copy to say so", `document.querySelector('article.msg.assistant .copy-answer').textContent === 'Copied'`)
	if got := tb.clipboard(); got != answer {
		t.Errorf("the answer's copy button copied %q, want %q", got, answer)
	}

	// The session list: the used sessions, titled, timed, searchable; not
	// the unused one.
	tb.do(chromedp.Click(chromedp.CSS(`#btn-sessions`)))
	const listed = `[...document.querySelectorAll('#session-list li[data-id]')]`
	tb.poll("the session list", `!document.getElementById('sessions').hidden && `+listed+`.length > 0`)
	var entries []struct{ ID, Name, Meta string }
	tb.eval(listed+`.map((li) => ({ id: li.dataset.id, name: li.querySelector('.name').textContent, meta: li.querySelector('.meta').textContent }))`, &entries)
	names := map[string]string{}
	for _, e := range entries {
		names[e.ID] = e.Name
		if e.Meta == "" {
			t.Errorf("session %s is listed without a time", e.ID)
		}
	}
	if len(entries) != 2 || names[id] != "Show me a Go hello world" || names[oinit.SessionID] != "fix the flaky test" {
		t.Errorf("listed %+v, want the page's and the other used session", entries)
	}
	tb.screenshot("sluice-web-sessions.png")
	tb.do(chromedp.SendKeys(chromedp.CSS(`#session-search`), "FLAKY"))
	tb.poll("the search to keep one", listed+`.length === 1 && `+listed+`[0].dataset.id === `+jsString(oinit.SessionID))
	tb.do(chromedp.SendKeys(chromedp.CSS(`#session-search`), " nothing"))
	tb.poll("the search to keep none", listed+`.length === 0 && document.querySelector('#session-list li.empty')`)
	tb.do(chromedp.KeyEvent("\x1b"))
	tb.poll("Esc to close the list", `document.getElementById('sessions').hidden`)

	// A tool call that waits for approval says so, in the composer and on
	// the tool's block, which shows its request's compact parameters.
	obs.after(func() { tb.send("list it") }, has(protocol.MethodPermissionRequest))
	tb.poll("the approval state", `document.getElementById('run').textContent === 'Waiting for your approval' &&
	  document.querySelector('.block.tool .tool-stage')?.textContent === 'waiting for approval' &&
	  document.querySelector('.block.tool')?.dataset.status === 'waiting' &&
	  document.querySelector('.block.tool .tool-params')?.textContent === 'echo listed'`)
	tb.screenshot("sluice-web-approval.png")
	snap = obs.after(func() { tb.do(chromedp.Click(chromedp.CSS(`.permission button[data-decision="allow"]`))) }, idleIn)
	tb.matches("after the approved call", snap)
	tb.poll("the tool to be done", `document.querySelector('.block.tool .tool-stage').textContent === 'done' && document.getElementById('run').hidden`)

	// Rewind asks first: Cancel keeps everything, Rewind cuts.
	listID := userMessageID(t, snap, "list it")
	rewindButton := chromedp.CSS(`article.msg.user[data-id="` + listID + `"] button.rewind`)
	tb.do(chromedp.Click(rewindButton))
	tb.poll("the confirmation", `document.getElementById('confirm').open && document.getElementById('confirm-text').textContent.includes('2 after it')`)
	tb.do(chromedp.Click(chromedp.CSS(`#confirm button[value="cancel"]`)))
	tb.poll("the dialog to close", `!document.getElementById('confirm').open`)
	tb.matches("after a cancelled rewind", snap)
	snap = obs.after(func() {
		tb.do(chromedp.Click(rewindButton))
		tb.poll("the confirmation again", `document.getElementById('confirm').open`)
		tb.do(chromedp.Click(chromedp.CSS(`#confirm button[value="ok"]`)))
	}, has(protocol.MethodMessagesRewound))
	tb.matches("after the confirmed rewind", snap)
	if n := len(snap.Messages); n != 2 {
		t.Errorf("after the rewind: %d messages, want 2", n)
	}

	// The connection drops; a message is answered meanwhile; the banner
	// shows until the page is back, resumed from its seq.
	before := tb.stats()
	snap = obs.after(func() {
		if st.ln.cut() == 0 {
			t.Fatal("no connection to cut")
		}
		tb.poll("the banner", `!document.getElementById('banner').hidden && !window.sluice.connected()`)
		tb.screenshot("sluice-web-reconnecting.png")
		obs.send(ctx, "sendMessage", map[string]any{"sessionId": id, "text": "while away"})
	}, idleIn)
	st.ln.resume()
	tb.poll("the banner to go", `document.getElementById('banner').hidden && window.sluice.connected()`)
	tb.matches("after the reconnect", snap)
	if after := tb.stats(); after.Snapshots != before.Snapshots || after.Resumes != before.Resumes+1 {
		t.Errorf("reconnect: stats %+v then %+v, want one resume and no snapshot", before, after)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// focus makes the tab behave as the focused window (the Clipboard API
// needs a focused document), whichever tab the browser shows.
func (tb *tab) focus() {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		tb.t.Fatal(err)
	}
}

// clipboard reads the clipboard's text in the page.
func (tb *tab) clipboard() string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("read the clipboard: %v", err)
	}
	return s
}
