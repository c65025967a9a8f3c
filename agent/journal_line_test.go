package agent

import (
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// TestEventLine: an event's line, framed by hand, is the line encodeRecord
// writes for the same record, so that files written before and after read
// the same.
func TestEventLine(t *testing.T) {
	t.Parallel()
	ok := true
	result := "a <b> & \"c\"\n\u2028"
	for _, ev := range []protocol.Event{
		protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: 7}, MessageID: "m", BlockIndex: 2, Chunk: "<tag> & \"quotes\" \\ é 😀\n", Stage: protocol.StageStreaming},
		protocol.ToolBlockUpdated{MessageID: "m", ToolID: "t", Name: "Bash", Stage: protocol.StageEnd, Parameters: `{"command":"ls"}`, Result: &result, Success: &ok},
		protocol.AssistantMessageAdded{Message: protocol.Message{ID: "m", Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}},
		protocol.AssistantContentUpdated{Header: protocol.Header{Seq: 3, ParentToolID: "toolu_1"}, MessageID: "c", Chunk: "child", Stage: protocol.StageStreaming},
	} {
		params, err := json.Marshal(protocol.WithHeader(ev, protocol.Header{ParentToolID: ev.Head().ParentToolID}))
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeRecord(record{Type: recEvent, Method: ev.Method(), Event: params})
		if err != nil {
			t.Fatal(err)
		}
		if got := eventLine(ev); string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", ev.Method(), got, want)
		}
	}
}
