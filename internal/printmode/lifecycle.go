package printmode

import (
	"sync"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/internal/hooks"
)

// HookRelay carries the command hooks' lifecycle (hooks.Runner.Observe)
// to the run that writes it as stream-json lines (--include-hook-events).
// What comes while no run is attached is dropped.
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

// hookStartedLine and hookResponseLine are a hook command's start and end,
// as Claude Code writes them with --include-hook-events.
type hookStartedLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

type hookResponseLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	// Output is stderr then stdout, as Claude Code joins them.
	Output    string `json:"output"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Outcome   string `json:"outcome"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

func (w *writer) hookLine(l hooks.Lifecycle) {
	session := w.sessionID()
	if !l.Done {
		w.line(hookStartedLine{
			Type: "system", Subtype: "hook_started", HookID: l.ID, HookName: l.Name, HookEvent: string(l.Event),
			UUID: uuid.NewString(), SessionID: session,
		})
		return
	}
	w.line(hookResponseLine{
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

type sessionStateLine struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	State       string `json:"state"`
	SDKHostOnly bool   `json:"sdk_host_only,omitempty"`
	UUID        string `json:"uuid"`
	SessionID   string `json:"session_id"`
}

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
	h.w.line(sessionStateLine{
		Type: "system", Subtype: "session_state_changed", State: s, SDKHostOnly: h.cfg.SessionState == SessionStateHost,
		UUID: uuid.NewString(), SessionID: h.w.sessionID(),
	})
	h.w.flush()
}
