package web

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// TestBrowserCompactionLabel runs /compact from the page while the model
// holds the summary after its first two chunks: the run state says
// "Compacting conversation…" with the elapsed time and the summary's
// length so far, not a bare "Working…", and says nothing once it ends.
func TestBrowserCompactionLabel(t *testing.T) {
	held := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(held)
		}
	}
	t.Cleanup(release)
	summary := modeltest.Text(0, "The user asked ", "for a long answer. ", "It was given.")
	script := modeltest.NewScript(
		modeltest.Answer("m1", "A long answer."),
		// The block's start and two chunks (34 characters), then the hold.
		modeltest.Response(modeltest.Start("m2"), summary[:3], modeltest.Gate(held), summary[3:], modeltest.Stop(model.StopEndTurn)),
	)
	st := newStack(t, script, stackOptions{})
	tb := newTab(t)
	id := tb.open(st.pageURL())

	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}
	obs.after(func() { tb.send("a long answer please") }, idleIn)
	tb.poll("the answer's end", `document.getElementById('run').hidden`)

	obs.after(func() { tb.send("/compact") }, has(protocol.MethodCompactionUpdated))
	const run = `document.getElementById('run')`
	tb.poll("the compaction label", `!`+run+`.hidden && `+run+`.dataset.state === 'compacting' &&
	  /^Compacting conversation… \d+s · 34 chars of summary$/.test(`+run+`.textContent)`)
	snap := obs.after(release, idleIn)
	tb.matches("after the compaction", snap)
	tb.poll("no label once it ended", run+`.hidden && !`+run+`.textContent.startsWith('Compacting')`)
}
