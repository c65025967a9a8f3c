package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// fake is a tool of a given kind, without a target path (an MCP server's
// tool, say).
type fake struct {
	name string
	kind tool.Kind
}

func (f fake) Name() string                   { return f.name }
func (f fake) Description() string            { return "" }
func (f fake) Schema() json.RawMessage        { return json.RawMessage(`{}`) }
func (f fake) Kind() tool.Kind                { return f.kind }
func (f fake) Compact(json.RawMessage) string { return "" }
func (f fake) Run(context.Context, *tool.Env, json.RawMessage, tool.Output) (tool.Result, error) {
	return tool.Result{}, nil
}

func TestDecide(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	allowed := filepath.Join(base, "allowed")
	for _, d := range []string{work, allowed} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(base, filepath.Join(work, "up")); err != nil {
		t.Fatal(err)
	}
	env := &tool.Env{WorkDir: work, AllowedDirs: []string{allowed}}

	read, write, edit, bash := tools.NewRead(), tools.NewWrite(), tools.NewEdit(), tools.NewBash()
	inside := json.RawMessage(`{"file_path": "a.go", "content": "x"}`)
	outside := json.RawMessage(`{"file_path": "` + filepath.Join(base, "x.go") + `", "content": "x"}`)
	inAllowed := json.RawMessage(`{"file_path": "` + filepath.Join(allowed, "x.go") + `", "content": "x"}`)
	viaLink := json.RawMessage(`{"file_path": "up/x.go", "old_string": "a", "new_string": "b"}`)
	cmd := json.RawMessage(`{"command": "rm -rf /"}`)
	mcpRead, mcpEdit, mcpExec := fake{"mcp_read", tool.ReadOnly}, fake{"mcp_edit", tool.Edit}, fake{"mcp_exec", tool.Execute}

	tests := []struct {
		mode   protocol.PermissionMode
		tool   tool.Tool
		params json.RawMessage
		want   Action
	}{
		{protocol.ModeDefault, read, inside, Allow},
		{protocol.ModeDefault, mcpRead, nil, Allow},
		{protocol.ModeDefault, write, inside, Ask},
		{protocol.ModeDefault, edit, inside, Ask},
		{protocol.ModeDefault, mcpEdit, nil, Ask},
		{protocol.ModeDefault, bash, cmd, Ask},
		{protocol.ModeDefault, mcpExec, nil, Ask},

		{protocol.ModeAcceptEdits, read, inside, Allow},
		{protocol.ModeAcceptEdits, write, inside, Allow},
		{protocol.ModeAcceptEdits, edit, inside, Allow},
		{protocol.ModeAcceptEdits, write, outside, Ask},
		{protocol.ModeAcceptEdits, write, inAllowed, Ask},
		{protocol.ModeAcceptEdits, edit, viaLink, Ask},
		{protocol.ModeAcceptEdits, write, json.RawMessage(`{"file_path": "../x.go"}`), Ask},
		{protocol.ModeAcceptEdits, write, json.RawMessage(`{}`), Allow},
		{protocol.ModeAcceptEdits, mcpEdit, nil, Allow},
		{protocol.ModeAcceptEdits, bash, cmd, Ask},
		{protocol.ModeAcceptEdits, mcpExec, nil, Ask},

		{protocol.ModeBypassPermissions, read, inside, Allow},
		{protocol.ModeBypassPermissions, write, outside, Allow},
		{protocol.ModeBypassPermissions, bash, cmd, Allow},

		{protocol.ModePlan, read, inside, Allow},
		{protocol.ModePlan, mcpRead, nil, Allow},
		{protocol.ModePlan, write, inside, Deny},
		{protocol.ModePlan, edit, inside, Deny},
		{protocol.ModePlan, bash, cmd, Deny},
		{protocol.ModePlan, mcpExec, nil, Deny},

		{protocol.PermissionMode("unknown"), bash, cmd, Ask},
		{protocol.PermissionMode("unknown"), read, inside, Allow},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+tt.tool.Name()+"/"+string(tt.params), func(t *testing.T) {
			t.Parallel()
			d := Decide(tt.mode, tt.tool, tt.params, env)
			if d.Action != tt.want {
				t.Errorf("Decide = %v (%s); want %v", d.Action, d.Reason, tt.want)
			}
			if d.Reason == "" {
				t.Error("no reason")
			}
			if d.Action == Deny && (!strings.Contains(d.Reason, "plan mode") || !strings.Contains(d.Reason, tt.tool.Name())) {
				t.Errorf("a denial must tell the model it is in plan mode: %q", d.Reason)
			}
		})
	}
}

func TestDecideWithoutEnv(t *testing.T) {
	t.Parallel()
	d := Decide(protocol.ModeAcceptEdits, tools.NewWrite(), json.RawMessage(`{"file_path": "/tmp/x"}`), nil)
	if d.Action != Ask {
		t.Errorf("got %v; want Ask without a working directory", d.Action)
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	for a, want := range map[Action]string{Allow: "allow", Ask: "ask", Deny: "deny", Action(7): "Action(7)"} {
		if a.String() != want {
			t.Errorf("%d: %q; want %q", int(a), a.String(), want)
		}
	}
}

// WebFetch is approved per host: its always-key names the host, its
// request says which host, and a URL without one is keyed by the tool.
func TestScopedApproval(t *testing.T) {
	t.Parallel()
	wf := &tools.WebFetch{}
	for _, tt := range []struct {
		params, key, reason string
		mode                protocol.PermissionMode
		action              Action
	}{
		{`{"url":"https://Example.com:8443/a","prompt":"p"}`, "WebFetch(domain:example.com)", "WebFetch fetches from example.com,", protocol.ModeDefault, Ask},
		{`{"url":"https://docs.example.com/b","prompt":"p"}`, "WebFetch(domain:docs.example.com)", "docs.example.com", protocol.ModeAcceptEdits, Ask},
		{`{"url":"not a url","prompt":"p"}`, "WebFetch", "WebFetch runs commands", protocol.ModeDefault, Ask},
		{`{"url":"https://example.com","prompt":"p"}`, "WebFetch(domain:example.com)", "bypassed", protocol.ModeBypassPermissions, Allow},
	} {
		if got := AlwaysKey(wf, json.RawMessage(tt.params)); got != tt.key {
			t.Errorf("%s: key %q, want %q", tt.params, got, tt.key)
		}
		d := Decide(tt.mode, wf, json.RawMessage(tt.params), nil)
		if d.Action != tt.action || !strings.Contains(d.Reason, tt.reason) {
			t.Errorf("%s in %s: %v %q, want %v with %q", tt.params, tt.mode, d.Action, d.Reason, tt.action, tt.reason)
		}
	}
	if got := AlwaysKey(tools.NewBash(), json.RawMessage(`{"command":"ls"}`)); got != "Bash" {
		t.Errorf("Bash's key %q", got)
	}
}
