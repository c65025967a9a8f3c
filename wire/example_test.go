package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/wire"
)

// A host writes a sendMessage request as one line, the framing of
// `sluice rpc` on stdio, and reads the server's lines back the same way.
func ExampleLineConn() {
	ctx := context.Background()
	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown session"}}` + "\n")
	conn := wire.NewLineConn(in, &out, wire.DefaultMaxMessageBytes)
	defer conn.Close()

	params, _ := json.Marshal(wire.SendMessageParams{SessionID: "s1", Text: "hello"})
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": wire.MethodSendMessage, "params": json.RawMessage(params)})
	if err := conn.Write(ctx, req); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())

	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			break // io.EOF: the peer closed its side
		}
		var reply struct {
			ID     int                     `json:"id"`
			Result *wire.SendMessageResult `json:"result"`
			Error  *wire.Error             `json:"error"`
		}
		if err := json.Unmarshal(msg, &reply); err != nil {
			fmt.Println(err)
			return
		}
		if reply.Error != nil {
			fmt.Printf("%d: error %d: %s\n", reply.ID, reply.Error.Code, reply.Error.Message)
			continue
		}
		fmt.Printf("%d: queued %s\n", reply.ID, reply.Result.MessageID)
	}
	// Output:
	// {"id":1,"jsonrpc":"2.0","method":"sendMessage","params":{"sessionId":"s1","text":"hello"}}
	// 1: queued m1
	// 2: error -32602: unknown session
}
