package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// TestBrowserFakeModelServer streams a ~20 KB answer with reasoning from a
// local model server through the real Anthropic provider (HTTP, SSE) to the
// page. A second tab opens mid-stream: it starts from a snapshot and
// follows the same deltas. A third tab restores the session from the
// session list.
func TestBrowserFakeModelServer(t *testing.T) {
	release := make(chan struct{})
	answer := fakemodel.NumberedAnswer(20_000)
	answer = append(answer, "\n\n**Done** — with `markdown`.")
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		switch {
		case strings.HasPrefix(r.LastUserText, "Summarize"):
			return fakemodel.Answer{Text: []string{"A summary."}}
		case r.LastUserText == "long answer":
			return fakemodel.Answer{Reasoning: []string{"Counting ", "words."}, Text: answer, HoldAfter: 1000, Release: release}
		}
		return fakemodel.Answer{Text: []string{"Hello ", "from the ", "model server."}}
	})
	defer fm.Close()
	provider := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: fm.URL()})
	st := newStack(t, provider, stackOptions{})

	tab1 := newTab(t)
	id := tab1.open(st.pageURL())
	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &wire.InitializeResult{}); err != nil {
		t.Fatal(err)
	}

	snap := obs.after(func() { tab1.send("hi") }, idleIn)
	tab1.matches("a short answer", snap)

	var tab2 *tab
	snap = obs.after(func() {
		tab1.send("long answer")
		tab1.poll("the answer to stream", `JSON.stringify(window.sluice.state()).includes('w000999 ')`)
		tab2 = newTab(t)
		tab2.open(st.pageURL() + "#session=" + id)
		close(release)
	}, idleIn)
	tab1.matches("the first tab after a 20 KB answer", snap)
	tab2.matches("a tab opened mid-stream", snap)
	last := snap.Messages[len(snap.Messages)-1]
	if got, want := last.Text(), strings.Join(answer, ""); got != want {
		t.Fatalf("answer of %d bytes, want %d", len(got), len(want))
	}
	if last.Blocks[0].Type != protocol.BlockReasoning || last.Blocks[0].EndedAt == 0 {
		t.Errorf("no ended reasoning block: %+v", last.Blocks[0])
	}
	var header string
	tab1.eval(`document.querySelector('#messages .reasoning summary').textContent`, &header)
	if !strings.HasPrefix(header, "Thought") {
		t.Errorf("reasoning header %q, want the frozen duration", header)
	}

	// A third tab starts its own session, then restores the first from the
	// session list.
	tab3 := newTab(t)
	other := tab3.open(st.pageURL())
	if other == id {
		t.Fatal("a tab without a session id joined an existing session")
	}
	tab3.do(chromedp.Click(chromedp.CSS("#btn-sessions")))
	tab3.do(chromedp.Click(chromedp.CSS(`#session-list li[data-id="` + id + `"] button`)))
	tab3.poll("the restored session", `window.sluice.sessionId() === '`+id+`' && window.sluice.connected()`)
	tab3.matches("a restored session", snap)

	// A URL naming a session that does not exist gets a new one.
	tab4 := newTab(t)
	if got := tab4.open(st.pageURL() + "#session=no-such-session"); got == "no-such-session" || got == "" {
		t.Errorf("unknown session in the URL: the page holds %q", got)
	}
}
