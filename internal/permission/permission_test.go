package permission

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/tool"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Mode
		wantErr error
	}{
		{"", Default, nil},
		{"default", Default, nil},
		{"acceptEdits", AcceptEdits, nil},
		{"bypassPermissions", BypassPermissions, nil},
		{"plan", Plan, nil},
		{"Plan", "", ErrUnknownMode},
		{"accept-edits", "", ErrUnknownMode},
		{"yolo", "", ErrUnknownMode},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

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
		mode   Mode
		tool   tool.Tool
		params json.RawMessage
		want   Action
	}{
		{Default, read, inside, Allow},
		{Default, mcpRead, nil, Allow},
		{Default, write, inside, Ask},
		{Default, edit, inside, Ask},
		{Default, mcpEdit, nil, Ask},
		{Default, bash, cmd, Ask},
		{Default, mcpExec, nil, Ask},

		{AcceptEdits, read, inside, Allow},
		{AcceptEdits, write, inside, Allow},
		{AcceptEdits, edit, inside, Allow},
		{AcceptEdits, write, outside, Ask},
		{AcceptEdits, write, inAllowed, Ask},
		{AcceptEdits, edit, viaLink, Ask},
		{AcceptEdits, write, json.RawMessage(`{"file_path": "../x.go"}`), Ask},
		{AcceptEdits, write, json.RawMessage(`{}`), Allow},
		{AcceptEdits, mcpEdit, nil, Allow},
		{AcceptEdits, bash, cmd, Ask},
		{AcceptEdits, mcpExec, nil, Ask},

		{BypassPermissions, read, inside, Allow},
		{BypassPermissions, write, outside, Allow},
		{BypassPermissions, bash, cmd, Allow},

		{Plan, read, inside, Allow},
		{Plan, mcpRead, nil, Allow},
		{Plan, write, inside, Deny},
		{Plan, edit, inside, Deny},
		{Plan, bash, cmd, Deny},
		{Plan, mcpExec, nil, Deny},

		{Mode("unknown"), bash, cmd, Ask},
		{Mode("unknown"), read, inside, Allow},
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
	d := Decide(AcceptEdits, tools.NewWrite(), json.RawMessage(`{"file_path": "/tmp/x"}`), nil)
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
