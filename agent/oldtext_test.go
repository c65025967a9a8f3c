package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// A Write that replaces a file carries the file's old text on its
// permission request, running and end events and in its block — read again
// after the question, since the file may change while it is open; one that
// creates a file, or replaces one too large to carry, has none.
func TestWriteCarriesOldText(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 129<<10)
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "t1", "Write", map[string]any{"file_path": "a.txt", "content": "new\n"}),
			modeltest.ToolUse(1, "t2", "Write", map[string]any{"file_path": "b.txt", "content": "b\n"}),
			modeltest.ToolUse(2, "t3", "Write", map[string]any{"file_path": "big.txt", "content": "small\n"}),
			modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Done."), modeltest.Stop("end_turn")),
	}}
	var work string
	s := newSession(t, p, func(o *agent.Options) {
		work = o.WorkDir
		o.Approve = func(_ context.Context, req protocol.PermissionRequest) protocol.Decision {
			if req.ToolID == "t1" { // the user edits the file while asked
				if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("edited meanwhile\n"), 0o644); err != nil {
					t.Error(err)
				}
			}
			return protocol.DecisionAllow
		}
	})
	for name, text := range map[string]string{"a.txt": "old\n", "big.txt": big} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := record(t, s)
	if _, err := s.Run(bg(t), "write them"); err != nil {
		t.Fatal(err)
	}
	rec.drain(s)
	rec.checkMatches(s)
	asked := map[string]string{"t1": "old\n", "t2": "", "t3": ""}
	want := map[string]string{"t1": "edited meanwhile\n", "t2": "", "t3": ""}
	stages := map[string]int{}
	for _, ev := range rec.events {
		switch e := ev.(type) {
		case protocol.PermissionRequest:
			if e.OldText != asked[e.ToolID] {
				t.Errorf("permission request of %s: oldText %q, want %q", e.ToolID, e.OldText, asked[e.ToolID])
			}
			stages[e.ToolID]++
		case protocol.ToolBlockUpdated:
			if e.Stage != protocol.StageRunning && e.Stage != protocol.StageEnd {
				continue
			}
			if e.OldText != want[e.ToolID] {
				t.Errorf("%s %s: oldText %q, want %q", e.ToolID, e.Stage, e.OldText, want[e.ToolID])
			}
			stages[e.ToolID]++
		}
	}
	for id := range want {
		if stages[id] != 3 {
			t.Errorf("%s: %d permission/running/end events, want 3", id, stages[id])
		}
	}
	for _, b := range s.Messages().Messages[1].Blocks {
		if b.OldText != want[b.ToolID] {
			t.Errorf("block %s: oldText %q, want %q", b.ToolID, b.OldText, want[b.ToolID])
		}
	}
	if got, _ := os.ReadFile(filepath.Join(work, "a.txt")); string(got) != "new\n" {
		t.Errorf("a.txt = %q", got)
	}
}
