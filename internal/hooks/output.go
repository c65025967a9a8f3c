package hooks

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Outcome is what the hooks of one event decided together. Several hooks
// may match one event; they all run, and a block from any of them wins.
type Outcome struct {
	// Block: a hook exited with 2 or answered "decision": "block". Reason
	// is what the model is told (PreToolUse: why the call was refused;
	// PostToolUse: feedback on the call; Stop: why to go on) or, for
	// UserPromptSubmit, why the prompt was refused.
	Block  bool
	Reason string
	// Permission is PreToolUse's decision: "allow", "deny", "ask" or ""
	// (no opinion). A deny beats an ask, an ask beats an allow.
	Permission       string
	PermissionReason string
	// UpdatedInput replaces the tool call's input (PreToolUse).
	UpdatedInput json.RawMessage
	// Halt: a hook answered "continue": false; the run stops and
	// StopReason is shown to the user.
	Halt       bool
	StopReason string
	// Context is text for the model's context: additionalContext, and the
	// plain stdout of UserPromptSubmit and SessionStart hooks.
	Context []string
	// Messages are warnings for the user (systemMessage, failed hooks).
	Messages []string
}

// output is a hook's JSON answer on stdout (Claude Code's fields).
type output struct {
	Continue       *bool  `json:"continue"`
	StopReason     string `json:"stopReason"`
	SuppressOutput bool   `json:"suppressOutput"`
	SystemMessage  string `json:"systemMessage"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`
	Specific       struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// parseOutput reads stdout as a JSON answer when it is one (an object);
// ok is false for plain text.
func parseOutput(stdout []byte) (out output, ok bool) {
	b := bytes.TrimSpace(stdout)
	if len(b) == 0 || b[0] != '{' {
		return output{}, false
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return output{}, false
	}
	return out, true
}

// permissionRank orders PreToolUse decisions: the stricter wins.
var permissionRank = map[string]int{"": 0, "allow": 1, "ask": 2, "deny": 3}

// add folds one hook's result into the outcome.
func (o *Outcome) add(ev Event, r result) {
	switch {
	case r.err != nil:
		o.Messages = append(o.Messages, r.err.Error())
		return
	case r.code == 2:
		reason := strings.TrimSpace(string(r.stderr))
		if ev == PreToolUse {
			o.permission("deny", reason)
		} else {
			o.block(reason)
		}
		return
	case r.code != 0:
		// A non-blocking error: the user hears of it, the run goes on.
		msg := strings.TrimSpace(string(r.stderr))
		if msg == "" {
			msg = "exit status " + strconv.Itoa(r.code)
		}
		o.Messages = append(o.Messages, r.name+": "+msg)
		return
	}
	out, ok := parseOutput(r.stdout)
	if !ok {
		if text := strings.TrimSpace(string(r.stdout)); text != "" && (ev == UserPromptSubmit || ev == SessionStart) {
			o.Context = append(o.Context, text)
		}
		return
	}
	if out.Continue != nil && !*out.Continue {
		o.Halt = true
		o.StopReason = join(o.StopReason, out.StopReason)
	}
	if out.SystemMessage != "" {
		o.Messages = append(o.Messages, out.SystemMessage)
	}
	if c := out.Specific.AdditionalContext; c != "" {
		o.Context = append(o.Context, c)
	}
	if ev == PreToolUse {
		d, reason := out.Specific.PermissionDecision, out.Specific.PermissionDecisionReason
		switch out.Decision { // the older spelling
		case "approve":
			d, reason = "allow", out.Reason
		case "block":
			d, reason = "deny", out.Reason
		}
		if _, known := permissionRank[d]; known {
			o.permission(d, reason)
		}
		if d == "allow" && len(out.Specific.UpdatedInput) > 0 && o.Permission == "allow" {
			o.UpdatedInput = out.Specific.UpdatedInput
		}
		return
	}
	if out.Decision == "block" {
		o.block(out.Reason)
	}
}

func (o *Outcome) permission(d, reason string) {
	switch {
	case permissionRank[d] > permissionRank[o.Permission]:
		o.Permission, o.PermissionReason = d, reason
		if d != "allow" {
			o.UpdatedInput = nil
		}
	case d == o.Permission:
		o.PermissionReason = join(o.PermissionReason, reason)
	}
}

func (o *Outcome) block(reason string) {
	o.Block = true
	o.Reason = join(o.Reason, reason)
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
