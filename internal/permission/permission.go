// Package permission decides whether a tool call may run, asks first, or is
// refused, after the permission modes Claude Code users know: default,
// acceptEdits, bypassPermissions and plan.
package permission

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// Action is what happens to a call.
type Action int

const (
	// Allow runs the call.
	Allow Action = iota
	// Ask asks the user through the attached face before running it.
	Ask
	// Deny refuses the call; Decision.Reason tells the model why.
	Deny
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is an action and why: the reason is shown to the user when
// asking, and to the model when denying.
type Decision struct {
	Action Action
	Reason string
}

// PathTarget is implemented by tools whose calls change one file (Write,
// Edit): acceptEdits allows them only inside the working directory.
type PathTarget interface {
	// TargetPath returns the path the call would change, as given in
	// params ("" when unknown).
	TargetPath(params json.RawMessage) string
}

// Scoped is implemented by tools whose approval is for part of what they
// can do (WebFetch: one host): a user's "always allow" of a call approves
// its scope only, for the session, and a call outside every approved scope
// asks again.
type Scoped interface {
	// ApprovalScope returns the call's scope ("domain:example.com") and
	// what asking says of it; "" when the call has none (it then asks
	// as the tool's kind says and fails in Run).
	ApprovalScope(params json.RawMessage) (scope, reason string)
}

// AlwaysKey is what a user's "always allow" of a call of t with params
// approves for the session: the tool, or for a Scoped tool the tool in
// that scope ("WebFetch(domain:example.com)").
func AlwaysKey(t tool.Tool, params json.RawMessage) string {
	if sc, ok := t.(Scoped); ok {
		if scope, _ := sc.ApprovalScope(params); scope != "" {
			return t.Name() + "(" + scope + ")"
		}
	}
	return t.Name()
}

// Decide decides a call of t with params in mode, for a session whose
// environment is env. An unknown mode decides as protocol.ModeDefault. Remembering a
// user's "always allow" is the caller's: it turns Ask into Allow, never Deny.
func Decide(mode protocol.PermissionMode, t tool.Tool, params json.RawMessage, env *tool.Env) Decision {
	name := t.Name()
	switch mode {
	case protocol.ModeBypassPermissions:
		return Decision{Allow, "permissions are bypassed"}
	case protocol.ModePlan:
		if t.Kind() == tool.ReadOnly {
			return Decision{Allow, name + " is read-only"}
		}
		return Decision{Deny, fmt.Sprintf(
			"%s was not run: the session is in plan mode, where only read-only tools run. "+
				"Do not try to change files or run commands; research with read-only tools, "+
				"then present your plan and wait for the user to approve it.", name)}
	}
	switch t.Kind() {
	case tool.ReadOnly:
		return Decision{Allow, name + " is read-only"}
	case tool.Edit:
		if mode != protocol.ModeAcceptEdits {
			return Decision{Ask, name + " changes files"}
		}
		pt, ok := t.(PathTarget)
		if !ok {
			return Decision{Allow, "edits are accepted"}
		}
		p := pt.TargetPath(params)
		if p == "" {
			// The call cannot run without a path; let it fail in Run.
			return Decision{Allow, "edits are accepted"}
		}
		var work tool.Env
		if env != nil {
			work.WorkDir = env.WorkDir // Not the allowed directories: they ask.
		}
		if _, err := tools.ResolvePath(&work, p); err != nil {
			return Decision{Ask, fmt.Sprintf("%s would change %s, outside the working directory", name, p)}
		}
		return Decision{Allow, "edits in the working directory are accepted"}
	}
	if sc, ok := t.(Scoped); ok {
		if scope, reason := sc.ApprovalScope(params); scope != "" {
			return Decision{Ask, reason}
		}
	}
	return Decision{Ask, name + " runs commands"}
}
