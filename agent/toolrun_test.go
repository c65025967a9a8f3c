package agent

import (
	"bytes"
	"testing"

	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestEndlessOutputIsBounded: past the streamed bound, output moves the
// short result once per shortResultEvery bytes, not once per write, so an
// endless command does not mean endless events.
func TestEndlessOutputIsBounded(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Provider: modeltest.NewScript(), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.publish(protocol.AssistantMessageAdded{Message: protocol.Message{ID: "a1", Role: protocol.RoleAssistant}})
	running := protocol.ToolBlockUpdated{MessageID: "a1", ToolID: "t1", Name: "Bash", Stage: protocol.StageRunning, Parameters: "{}"}
	s.publish(running)
	out := &toolOutput{s: s, ev: running}
	line := append(bytes.Repeat([]byte("y"), 1023), '\n')
	for out.streamed < maxStreamedOutput {
		out.Write(line)
	}
	before := s.Seq()
	const extra = 4 << 20
	for range extra / len(line) {
		out.Write(line)
	}
	if n, limit := s.Seq()-before, int64(extra/shortResultEvery+1); n > limit {
		t.Fatalf("%d events for %d bytes past the bound, want at most %d", n, extra, limit)
	}
	if got := s.Messages().Messages[0].Blocks[0].ShortResult; got == "" {
		t.Fatal("the short result stopped moving")
	}
}
