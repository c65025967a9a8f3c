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

// gatedText is text block idx streaming before, then waiting for gate,
// then streaming after.
func gatedText(idx int, before []string, gate chan struct{}, after []string) []modeltest.Step {
	steps := []modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockText}}}
	delta := func(s string) modeltest.Step {
		return modeltest.Step{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaText, Text: s}}
	}
	for _, s := range before {
		steps = append(steps, delta(s))
	}
	steps = append(steps, modeltest.Gate(gate)...)
	for _, s := range after {
		steps = append(steps, delta(s))
	}
	return append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockStop, Index: idx}})
}

// observer is the test's own Go client, attached to the page's session on
// a listener the test never cuts: it tells when a step is over and what
// getMessages says then.
type observer struct {
	*client
	sessionID string
}

// after runs act and waits until the notifications it causes satisfy
// done; it returns getMessages' snapshot at that point.
func (o *observer) after(act func(), done func([]note) bool) protocol.Snapshot {
	o.t.Helper()
	o.mu.Lock()
	n0 := len(o.notes)
	o.mu.Unlock()
	act()
	o.waitNotes(func(ns []note) bool { return done(ns[n0:]) })
	var snap protocol.Snapshot
	if err := o.call(context.Background(), "getMessages", map[string]string{"sessionId": o.sessionID}, &snap); err != nil {
		o.t.Fatalf("getMessages: %v", err)
	}
	return snap
}

func has(method string) func([]note) bool {
	return func(ns []note) bool {
		for _, n := range ns {
			if n.Method == method {
				return true
			}
		}
		return false
	}
}

func userMessageID(t *testing.T, snap protocol.Snapshot, text string) string {
	t.Helper()
	for _, m := range snap.Messages {
		if m.Role == protocol.RoleUser && m.Text() == text {
			return m.ID
		}
	}
	t.Fatalf("no user message %q", text)
	return ""
}

// TestBrowserSession drives a whole session from the page in a real
// Chromium, and after every step checks that the page holds exactly what
// getMessages returns and shows what a fresh rendering of it shows: a
// reasoning+markdown answer, a connection cut mid-stream and resumed from
// the missed events, a tool call approved in the page, a bang command, an
// abort, a compaction, a second tab, a rewind by request id, a malicious answer, a
// clear.
func TestBrowserSession(t *testing.T) {
	gate := make(chan struct{})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "Let me ", "think."),
			modeltest.Text(1, "# Hello\n\nSome **bold** text", " and `code`.\n\n- one\n- two\n\n```go\nfmt.Println(\"hi\")\n```\n"),
			modeltest.Stop(model.StopEndTurn)),
		modeltest.Response(modeltest.Start("m2"), gatedText(0, []string{"alpha ", "beta "}, gate, []string{"gamma ", "delta"}), modeltest.Stop(model.StopEndTurn)),
		modeltest.Response(modeltest.Start("m3"), modeltest.Text(0, "Running it."),
			modeltest.ToolUse(1, "toolu_1", "Bash", map[string]string{"command": "echo tool-output"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m4", "The tool said ", "tool-output."),
		modeltest.Response(modeltest.Start("ma"), gatedText(0, []string{"partial "}, make(chan struct{}), []string{"never"}), modeltest.Stop(model.StopEndTurn)),
		modeltest.Answer("m5", "Summary: hello, long, tool."),
		modeltest.Answer("m6", "Hi tab two."),
		modeltest.Answer("m7", "<script>window.__pwned=1</script>", "<img src=x onerror=\"window.__pwned=2\">",
			" [click](javascript:window.__pwned=3) ![x](https://example.invalid/p.png) <b onmouseover=alert(1)>b</b>"),
	)
	st := newStack(t, script, stackOptions{})
	tab1 := newTab(t)
	id := tab1.open(st.pageURL())
	if id == "" {
		t.Fatal("the page has no session")
	}

	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}
	tab1.matches("a new session", *init.Snapshot)

	// 1. A streamed answer with reasoning and markdown.
	snap := obs.after(func() { tab1.send("hello") }, idleIn)
	tab1.matches("after the first answer", snap)
	var headings int
	tab1.eval(`document.querySelectorAll('#messages h1').length`, &headings)
	if headings != 1 {
		t.Errorf("the answer's heading was not rendered as markdown (%d h1)", headings)
	}

	// 2. The connection drops mid-stream; the answer goes on while the page
	// is away; the page comes back with the events it missed, not a
	// snapshot.
	before := tab1.stats()
	snap = obs.after(func() {
		tab1.send("long")
		tab1.poll("the first half of the answer", `JSON.stringify(window.sluice.state()).includes('beta')`)
		if st.ln.cut() == 0 {
			t.Fatal("no connection to cut")
		}
		tab1.poll("the page to notice", `!window.sluice.connected()`)
		close(gate)
	}, idleIn)
	st.ln.resume()
	tab1.matches("after a dropped connection", snap)
	if after := tab1.stats(); after.Snapshots != before.Snapshots || after.Resumes != before.Resumes+1 {
		t.Errorf("reconnect: stats %+v then %+v, want one resume and no snapshot", before, after)
	}

	// 3. A tool call that needs approval, approved in the page.
	snap = obs.after(func() {
		tab1.send("run a tool")
		tab1.do(chromedp.Click(chromedp.CSS(`.permission button[data-decision="allow"]`)))
	}, idleIn)
	tab1.matches("after a tool call", snap)
	if !strings.Contains(lastToolResult(snap), "tool-output") {
		t.Errorf("the tool did not run: %+v", snap.Messages[len(snap.Messages)-2])
	}

	// 4. A shell command typed as !command.
	snap = obs.after(func() { tab1.send("!echo bang-output") }, idleIn)
	tab1.matches("after a bang command", snap)

	// 4b. Esc aborts a streaming answer; what streamed stays.
	snap = obs.after(func() {
		tab1.send("stop me")
		tab1.poll("the partial answer", `JSON.stringify(window.sluice.state()).includes('partial')`)
		tab1.do(chromedp.KeyEvent("\x1b"))
	}, idleIn)
	tab1.matches("after an abort", snap)
	if !strings.Contains(snap.Messages[len(snap.Messages)-1].Text(), "partial") {
		t.Errorf("the aborted answer lost what streamed: %+v", snap.Messages[len(snap.Messages)-1])
	}

	// 5. A compaction: the summary is appended, no snapshot is pulled.
	before = tab1.stats()
	snap = obs.after(func() { tab1.do(chromedp.Click(chromedp.CSS("#btn-compact"))) },
		func(ns []note) bool { return has(protocol.MethodCompactBlockAdded)(ns) && idleIn(ns) })
	tab1.matches("after a compaction", snap)
	if after := tab1.stats(); after.Snapshots != before.Snapshots {
		t.Errorf("the compaction made the page pull a snapshot: %+v then %+v", before, after)
	}

	// 6. A second tab on the same session; a message sent from it shows
	// live in both.
	tab2 := newTab(t)
	tab2.open(st.pageURL() + "#session=" + id)
	tab2.matches("a second tab", snap)
	snap = obs.after(func() { tab2.send("from tab two") }, idleIn)
	tab1.matches("the first tab, after the second tab's message", snap)
	tab2.matches("the second tab, after its message", snap)
	tab1.screenshot("sluice-web-session.png")

	// 7. A rewind from the first tab, by request id: both tabs cut their
	// lists on messagesRewound, no list travels, and the requester gets
	// the message's text back in its input box.
	longID := userMessageID(t, snap, "long")
	before1, before2 := tab1.stats(), tab2.stats()
	snap = obs.after(func() {
		tab1.do(chromedp.Click(chromedp.CSS(`article.msg.user[data-id="` + longID + `"] button.rewind`)))
		tab1.poll("the rewind to be confirmed", `document.getElementById('confirm').open`)
		tab1.do(chromedp.Click(chromedp.CSS(`#confirm button[value="ok"]`)))
	}, has(protocol.MethodMessagesRewound))
	tab1.matches("the first tab, after the rewind", snap)
	tab2.matches("the second tab, after the rewind", snap)
	tab1.poll("the rewound text in the input box", `document.getElementById('input').value === 'long'`)
	if a1, a2 := tab1.stats(), tab2.stats(); a1.Snapshots != before1.Snapshots || a2.Snapshots != before2.Snapshots {
		t.Errorf("the rewind made a page pull a snapshot")
	}
	if n := len(snap.Messages); n != 2 {
		t.Errorf("after the rewind: %d messages, want the first exchange only", n)
	}

	// 8. An answer full of markup renders as text.
	snap = obs.after(func() { tab1.send("show me html") }, idleIn)
	tab1.matches("after a malicious answer", snap)
	var check struct {
		Pwned    bool
		Elements int
		Shown    bool
		Hrefs    []string
	}
	tab1.eval(`(() => {
	  const m = document.getElementById('messages');
	  return {
	    pwned: window.__pwned !== undefined,
	    elements: m.querySelectorAll('script, img, iframe, b, [onerror], [onmouseover]').length,
	    shown: m.textContent.includes('<script>window.__pwned=1</script>') && m.textContent.includes('onerror='),
	    hrefs: [...m.querySelectorAll('a')].map((a) => a.getAttribute('href')),
	  };
	})()`, &check)
	if check.Pwned || check.Elements != 0 || !check.Shown {
		t.Errorf("model output became markup: %+v", check)
	}
	for _, h := range check.Hrefs {
		if !strings.HasPrefix(h, "https://") && !strings.HasPrefix(h, "http://") {
			t.Errorf("unsafe link %q", h)
		}
	}
	tab1.screenshot("sluice-web-markup.png")

	// 9. Clear: the page replaces its list with the answer's snapshot.
	snap = obs.after(func() { tab1.do(chromedp.Click(chromedp.CSS("#btn-clear"))) }, has(protocol.MethodMessagesCleared))
	tab1.matches("after clear", snap)
	tab2.matches("the second tab, after clear", snap)
	if len(snap.Messages) != 0 {
		t.Errorf("clear left %d messages", len(snap.Messages))
	}
}

func lastToolResult(snap protocol.Snapshot) string {
	for i := len(snap.Messages) - 1; i >= 0; i-- {
		for _, b := range snap.Messages[i].Blocks {
			if b.Type == protocol.BlockTool {
				return b.Result
			}
		}
	}
	return ""
}
