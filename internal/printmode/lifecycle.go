package printmode

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/internal/streamjson"
)

// HookRelay carries the command hooks' lifecycle (hooks.Runner.Observe)
// to the run that writes it as stream-json lines: every hook's with
// --include-hook-events, SessionStart's always (as Claude Code). What comes
// while no run is attached is dropped.
type HookRelay struct {
	mu sync.Mutex
	to func(hooks.Lifecycle)
}

// Observe is hooks.Runner.Observe.
func (r *HookRelay) Observe(l hooks.Lifecycle) {
	r.mu.Lock()
	to := r.to
	r.mu.Unlock()
	if to != nil {
		to(l)
	}
}

func (r *HookRelay) attach(to func(hooks.Lifecycle)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.to = to
	r.mu.Unlock()
}

// hookLines puts a run's hook lines where Claude Code has them: after
// every line of what the session published before the hook started or
// ended. The hook's goroutine (the session's, blocked on the hook) waits
// until its line is written, so nothing the session publishes later can
// come before it.
type hookLines struct {
	w       *cclines.Writer
	mu      sync.Mutex
	queue   []hookWait
	cur     context.Context    // the loop's wait
	wake    context.CancelFunc // cancels cur: wakes the loop from its wait
	stopped bool
	on      bool // hook lines are written in this run
	// all writes every hook's lines (--include-hook-events); without it
	// only SessionStart's, which Claude Code always writes.
	all bool
}

type hookWait struct {
	l       hooks.Lifecycle
	written chan struct{}
}

func newHookLines(w *cclines.Writer, on, all bool) *hookLines {
	return &hookLines{w: w, on: on, all: all}
}

// observe is the relay's sink while the run goes on.
func (h *hookLines) observe(l hooks.Lifecycle) {
	if !h.all && l.Event != hooks.SessionStart {
		return
	}
	hw := hookWait{l: l, written: make(chan struct{})}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.queue = append(h.queue, hw)
	wake := h.wake // nil before the loop's first wait, which sees the queue
	h.mu.Unlock()
	if wake != nil {
		wake()
	}
	<-hw.written
}

// waitContext is the context of the loop's next wait: done, or, while
// hook lines are written, one that is also cancelled as soon as a hook
// line is queued (made anew only after it was).
func (h *hookLines) waitContext(done context.Context) context.Context {
	if !h.on {
		return done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil || h.cur.Err() != nil {
		h.cur, h.wake = context.WithCancel(done)
	}
	if len(h.queue) > 0 {
		h.wake()
	}
	return h.cur
}

// write handles what the subscription holds, then writes the queued hook
// lines and lets their hooks go on. It reports whether an item ended the
// run.
func (h *hookLines) write(sub *agent.Subscription, handle func(agent.Item) bool) (ended bool) {
	for sub.Pending() > 0 && !ended {
		it, err := sub.NextItem(context.Background())
		if err != nil {
			break
		}
		ended = handle(it)
	}
	h.flush()
	return ended
}

func (h *hookLines) flush() {
	h.mu.Lock()
	q := h.queue
	h.queue = nil
	h.mu.Unlock()
	for _, hw := range q {
		hookLine(h.w, hw.l)
		close(hw.written)
	}
	if len(q) > 0 {
		h.w.Flush()
	}
}

// end writes what is queued and lets later hooks go on unwritten: the run
// is over.
func (h *hookLines) end() {
	h.mu.Lock()
	h.stopped = true
	if h.wake != nil {
		h.wake() // releases cur
	}
	h.mu.Unlock()
	h.flush()
}

func hookLine(w *cclines.Writer, l hooks.Lifecycle) {
	session := w.SessionID()
	if !l.Done {
		w.Line(streamjson.HookStartedLine{
			Type: "system", Subtype: "hook_started", HookID: l.ID, HookName: l.Name, HookEvent: string(l.Event),
			UUID: uuid.NewString(), SessionID: session,
		})
		return
	}
	w.Line(streamjson.HookResponseLine{
		Type: "system", Subtype: "hook_response", HookID: l.ID, HookName: l.Name, HookEvent: string(l.Event),
		Output: l.Stderr + l.Stdout, Stdout: l.Stdout, Stderr: l.Stderr, ExitCode: l.ExitCode, Outcome: l.Outcome,
		UUID: uuid.NewString(), SessionID: session,
	})
}

// Session states, as system/session_state_changed reports them.
const (
	stateRunning        = "running"
	stateRequiresAction = "requires_action"
	stateIdle           = "idle"
)

// Who hears of session state changes (Config.SessionState).
const (
	// SessionStateHost writes them marked sdk_host_only, for the SDK's own
	// bookkeeping (CLAUDE_CODE_SDK_READS_SESSION_STATE, which the SDK sets).
	SessionStateHost = "host"
	// SessionStateAll writes them for every reader
	// (CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS).
	SessionStateAll = "all"
)

// state writes a system/session_state_changed line when the host wants
// them and the state changed.
func (h *host) state(s string) {
	if h.cfg.SessionState == "" || h.cfg.OutputFormat != FormatStreamJSON {
		return
	}
	h.mu.Lock()
	same := h.sessionState == s
	h.sessionState = s
	h.mu.Unlock()
	if same {
		return
	}
	h.w.Line(streamjson.SessionStateLine{
		Type: "system", Subtype: "session_state_changed", State: s, SDKHostOnly: h.cfg.SessionState == SessionStateHost,
		UUID: uuid.NewString(), SessionID: h.w.SessionID(),
	})
	h.w.Flush()
}
