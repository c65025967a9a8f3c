package protocol_test

import (
	"bytes"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// TestMergeLikeOneByOne: a merged pair of tool events reduces as the two
// one by one, also where a field is omitted or changes between them (cases
// FuzzReducer found); a running event carrying a final value is not merged.
func TestMergeLikeOneByOne(t *testing.T) {
	t.Parallel()
	r := "R"
	yes := true
	base := []protocol.Event{
		protocol.AssistantMessageAdded{Header: hdr(1), Message: protocol.Message{ID: "a1"}},
		protocol.ToolBlockUpdated{Header: hdr(2), MessageID: "a1", ToolID: "t1", Name: "Bash", Stage: protocol.StageStart},
	}
	tool := func(seq int64, stage protocol.Stage, f func(*protocol.ToolBlockUpdated)) protocol.Event {
		e := protocol.ToolBlockUpdated{Header: hdr(seq), MessageID: "a1", Stage: stage}
		f(&e)
		return e
	}
	tests := []struct {
		name   string
		p, n   protocol.Event
		merges bool
	}{
		{"running, the later omits name and parameters",
			tool(3, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.Name, e.CompactParams, e.ResultChunk = "Other", "x", "a" }),
			tool(4, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.ResultChunk = "b" }), true},
		{"running, values change",
			tool(3, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.Parameters, e.ShortResult, e.ResultChunk = "{1}", "a", "a" }),
			tool(4, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.Parameters, e.ShortResult, e.ResultChunk = "{2}", "b", "b" }), true},
		{"streaming, the tool's name changes",
			tool(3, protocol.StageStreaming, func(e *protocol.ToolBlockUpdated) { e.ToolID, e.Name, e.ParametersChunk = "t1", "Bash", "{" }),
			tool(4, protocol.StageStreaming, func(e *protocol.ToolBlockUpdated) { e.ToolID, e.Name, e.ParametersChunk = "t2", "Read", "}" }), true},
		{"running with a result, then output",
			tool(3, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.Result, e.Success = &r, &yes }),
			tool(4, protocol.StageRunning, func(e *protocol.ToolBlockUpdated) { e.ResultChunk = "c" }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var one, merged protocol.List
			for _, ev := range append(append([]protocol.Event{}, base...), tt.p, tt.n) {
				if err := one.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			m, ok := protocol.Merge(tt.p, tt.n)
			if ok != tt.merges {
				t.Fatalf("merged: %v, want %v", ok, tt.merges)
			}
			if !ok {
				return
			}
			for _, ev := range append(append([]protocol.Event{}, base...), m) {
				if err := merged.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if a, b := stateJSON(t, one.Snapshot()), stateJSON(t, merged.Snapshot()); !bytes.Equal(a, b) {
				t.Errorf("one by one %s\nmerged     %s", a, b)
			}
		})
	}
}
