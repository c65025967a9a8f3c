package protocol_test

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/protocol"
)

// A consumer keeps its copy of a session's messages with the one reducer,
// List, applying the events as they arrive (here decoded from the wire).
func ExampleList() {
	var list protocol.List
	lines := []struct{ method, params string }{
		{"userMessageAdded", `{"sessionId":"s","seq":1,"message":{"id":"u1","role":"user","createdAt":0,"blocks":[{"type":"text","content":"Hi"}]}}`},
		{"assistantMessageAdded", `{"sessionId":"s","seq":2,"message":{"id":"a1","role":"assistant","createdAt":0,"blocks":[]}}`},
		{"assistantContentUpdated", `{"sessionId":"s","seq":3,"messageId":"a1","blockIndex":0,"chunk":"Hello","stage":"streaming"}`},
		{"assistantContentUpdated", `{"sessionId":"s","seq":4,"messageId":"a1","blockIndex":0,"chunk":", world.","stage":"streaming"}`},
		{"assistantContentUpdated", `{"sessionId":"s","seq":5,"messageId":"a1","blockIndex":0,"chunk":"","stage":"end"}`},
	}
	for _, l := range lines {
		ev, err := protocol.Decode(l.method, []byte(l.params))
		if err != nil {
			panic(err)
		}
		if err := list.Apply(ev); err != nil {
			panic(err)
		}
	}
	snap := list.Snapshot()
	for _, m := range snap.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	fmt.Println("seq", snap.Seq)

	// An event from the past is dropped; one after a gap asks for a
	// snapshot (pull getMessages, then Reset).
	stale := protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: 4}, MessageID: "a1", Chunk: "x"}
	fmt.Println(errors.Is(list.Apply(stale), protocol.ErrStale))
	gap := protocol.MessagesCleared{Header: protocol.Header{SessionID: "s", Seq: 9}}
	fmt.Println(errors.Is(list.Apply(gap), protocol.ErrGap))
	// Output:
	// user: Hi
	// assistant: Hello, world.
	// seq 5
	// true
	// true
}
