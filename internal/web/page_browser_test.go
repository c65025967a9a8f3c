package web

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestBrowserFollowsNewContent: a long session opens at its end; a new
// message and its streamed answer are scrolled into view; a reader who
// scrolled up is not pulled down by the stream.
func TestBrowserFollowsNewContent(t *testing.T) {
	long := func(id, word string) []modeltest.Step {
		var chunks []string
		for i := range 40 {
			chunks = append(chunks, fmt.Sprintf("%s line %d\n\n", word, i))
		}
		return modeltest.Answer(id, chunks...)
	}
	gate := make(chan struct{})
	script := modeltest.NewScript(long("m1", "one"), long("m2", "two"), long("m3", "three"),
		long("m4", "four"),
		modeltest.Response(modeltest.Start("m5"), gatedText(0, []string{"five start\n\n"}, gate, []string{"five end"}), modeltest.Stop(model.StopEndTurn)))
	st := newStack(t, script, stackOptions{})
	ctx := context.Background()

	// The history is made before the page opens.
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil)}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{}, &init); err != nil {
		t.Fatal(err)
	}
	obs.sessionID = init.SessionID
	for _, q := range []string{"first", "second", "third"} {
		obs.after(func() { obs.send(ctx, "sendMessage", map[string]any{"text": q}) }, idleIn)
	}

	tb := newTab(t)
	tb.open(st.pageURL() + "#session=" + init.SessionID)
	const atEnd = `(() => { const m = document.getElementById('messages');
	  return m.scrollHeight > 2 * m.clientHeight && m.scrollHeight - m.scrollTop - m.clientHeight < 2; })()`
	tb.poll("a long session to open at its end", atEnd)

	snap := obs.after(func() { tb.send("fourth") }, idleIn)
	tb.matches("after a long answer", snap)
	tb.poll("the new answer in view", atEnd+` && document.getElementById('messages').textContent.includes('four line 39')`)

	// Scrolled up, the reader stays where they are while an answer streams.
	snap = obs.after(func() {
		tb.send("fifth")
		tb.poll("the streaming answer in view", atEnd+` && document.getElementById('messages').textContent.includes('five start')`)
		tb.eval(`(() => { const m = document.getElementById('messages');
		  m.addEventListener('scroll', () => { window.__scrolled = true; }, { once: true });
		  m.scrollTop = 0; })()`, nil)
		tb.poll("the reader's scroll", `window.__scrolled === true`)
		close(gate)
	}, idleIn)
	tb.matches("after the answer the reader scrolled away from", snap)
	var top float64
	tb.eval(`document.getElementById('messages').scrollTop`, &top)
	if top != 0 {
		t.Errorf("the stream moved a reader who had scrolled up to %v", top)
	}
}

// TestBrowserQueueTasksAndBtw: a message sent from the page while a run is
// going shows as queued until the session sends it at the run's next model
// request; a /btw question is answered beside the transcript without
// entering the session; a background command shows as a running task
// until it is stopped.
func TestBrowserQueueTasksAndBtw(t *testing.T) {
	gate := make(chan struct{})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Gate(gate),
			modeltest.ToolUse(0, "toolu_1", "Bash", map[string]any{"command": "echo serving; sleep 600", "run_in_background": true}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m2", "It is 42."), // the side question's answer
		modeltest.Answer("m3", "Started, and noted."),
		modeltest.Response(modeltest.Start("m4"),
			modeltest.ToolUse(0, "toolu_2", "KillShell", map[string]any{"shell_id": "bash_1"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m5", "Stopped."),
	)
	st := newStack(t, script, stackOptions{mode: protocol.ModeBypassPermissions})
	tb := newTab(t)
	id := tb.open(st.pageURL())
	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}

	obs.after(func() { tb.send("start the server") }, has(protocol.MethodAssistantMessageAdded))
	snap := obs.after(func() { tb.send("and note it") }, has(protocol.MethodQueueChanged))
	if len(snap.Queued) != 1 || snap.Queued[0].Text != "and note it" {
		t.Fatalf("the session's queue: %+v", snap.Queued)
	}
	tb.poll("the queued message", `document.querySelector('#queue li') && document.querySelector('#queue li').textContent.includes('and note it')`)
	tb.send("/btw what is the answer?")
	tb.poll("the side answer", `!document.getElementById('btw').hidden && document.getElementById('btw').textContent.includes('It is 42.')`)

	// The task's output arrives whenever the command prints: the
	// snapshot is taken once both it and the run's end are in.
	printed := func(ns []note) bool {
		for _, n := range ns {
			var u protocol.TaskUpdated
			if n.Method == protocol.MethodTaskUpdated && json.Unmarshal(n.Params, &u) == nil && u.ShortResult != "" {
				return true
			}
		}
		return false
	}
	snap = obs.after(func() { close(gate) }, func(ns []note) bool { return idleIn(ns) && printed(ns) })
	tb.matches("after the steered run", snap)
	if len(snap.Tasks) != 1 || snap.Tasks[0].TaskID != "bash_1" {
		t.Fatalf("the session's tasks: %+v", snap.Tasks)
	}
	tb.poll("the queue to empty", `document.getElementById('queue').hidden`)
	tb.poll("the running task and its output", `!document.getElementById('tasks').hidden && document.getElementById('tasks').textContent.includes('bash_1 echo serving; sleep 600 · serving')`)
	var text string
	tb.eval(`document.getElementById('messages').textContent`, &text)
	if strings.Contains(text, "what is the answer") || strings.Contains(text, "It is 42.") {
		t.Errorf("the side question entered the transcript: %q", text)
	}

	snap = obs.after(func() { tb.send("stop it") }, idleIn)
	tb.matches("after the task was stopped", snap)
	tb.poll("the task list to empty", `document.getElementById('tasks').hidden`)
}

// TestBrowserSubagent: a subagent's messages show nested under its Agent
// call as they stream, and the live page is what a fresh rendering of the
// snapshot shows.
func TestBrowserSubagent(t *testing.T) {
	gate := make(chan struct{})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("p1"), modeltest.Text(0, "Delegating."),
			modeltest.ToolUse(1, "toolu_agent", "Agent", map[string]any{"description": "scout", "prompt": "look around"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Response(modeltest.Start("c1"), modeltest.Text(0, "Looking "), modeltest.Gate(gate),
			modeltest.ToolUse(1, "toolu_child", "Bash", map[string]any{"command": "echo from-the-child"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("c2", "The child saw it."),
		modeltest.Answer("p2", "Parent done."),
	)
	st := newStack(t, script, stackOptions{mode: protocol.ModeBypassPermissions, subagents: true})
	tb := newTab(t)
	id := tb.open(st.pageURL())
	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	var init wire.InitializeResult
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &init); err != nil {
		t.Fatal(err)
	}
	obs.after(func() { tb.send("delegate") }, func(ns []note) bool {
		for _, n := range ns {
			var e protocol.AssistantContentUpdated
			if n.Method == protocol.MethodAssistantContentUpdated && json.Unmarshal(n.Params, &e) == nil &&
				e.ParentToolID == "toolu_agent" && strings.Contains(e.Chunk, "Looking") {
				return true
			}
		}
		return false
	})
	tb.poll("the subagent's text under its call", `(() => { const s = document.querySelector('.block.tool .subagent');
	  return s && !s.hidden && s.textContent.includes('look around') && s.textContent.includes('Looking'); })()`)
	snap := obs.after(func() { close(gate) }, idleIn)
	tb.matches("after the subagent's run", snap)
	var text string
	tb.eval(`document.querySelector('.block.tool .subagent').textContent`, &text)
	for _, want := range []string{"Looking", "Bash", "echo from-the-child", "The child saw it."} {
		if !strings.Contains(text, want) {
			t.Errorf("the nested messages lack %q: %q", want, text)
		}
	}
}
