package protocol

import (
	"errors"
	"fmt"
)

// PermissionMode decides which tool calls run, which ask first and which
// are refused; its values are the names Claude Code's users type
// (--permission-mode acceptEdits). It is the one mode type of sluice: the
// agent's options, the host protocol and the permission rules all use it.
type PermissionMode string

// The permission modes.
const (
	// ModeDefault runs read-only tools; edits and commands ask first.
	ModeDefault PermissionMode = "default"
	// ModeAcceptEdits also runs edits inside the working directory;
	// commands, and edits elsewhere, ask first.
	ModeAcceptEdits PermissionMode = "acceptEdits"
	// ModeBypassPermissions runs everything without asking.
	ModeBypassPermissions PermissionMode = "bypassPermissions"
	// ModePlan runs read-only tools and refuses the rest, so that the model
	// plans before it changes anything.
	ModePlan PermissionMode = "plan"
)

// PermissionModes lists the modes in the order a face offers them.
var PermissionModes = []PermissionMode{ModeDefault, ModeAcceptEdits, ModeBypassPermissions, ModePlan}

// ErrUnknownPermissionMode is returned by ParsePermissionMode for a name
// that is not a mode.
var ErrUnknownPermissionMode = errors.New("unknown permission mode")

// ParsePermissionMode returns the mode named s; "" is ModeDefault.
func ParsePermissionMode(s string) (PermissionMode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	for _, m := range PermissionModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q (want default, acceptEdits, bypassPermissions or plan)", ErrUnknownPermissionMode, s)
}
