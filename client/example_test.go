package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/wire"
)

// A host drives a session over the host protocol and keeps its message
// list. A program starts the server with
//
//	c, err := client.Start(ctx, exec.Command("sluice", "rpc"), client.Options{})
//
// here an in-process server on a scripted model stands in for it.
func Example() {
	srv := rpc.NewServer(rpc.Options{
		NewSession: func(context.Context, rpc.SessionConfig) (agent.Options, error) {
			return agent.Options{Provider: modeltest.NewScript(modeltest.Answer("m1", "Hello", " from sluice."))}, nil
		},
		WorkDir: os.TempDir(),
	})
	defer srv.Close()
	srvSide, hostSide := rpctest.Pipe(0)
	go srv.ServeConn(context.Background(), srvSide)

	ctx := context.Background()
	c := client.New(hostSide, client.Options{})
	defer c.Close()
	sess, err := c.Initialize(ctx, wire.InitializeParams{PermissionMode: "default"})
	if err != nil {
		panic(err)
	}
	// Run sends the message and waits until the session is idle; its
	// answer is in the list the client keeps.
	if _, err := sess.Run(ctx, "Say hello"); err != nil {
		panic(err)
	}
	for _, m := range sess.Messages().Messages { // equals getMessages
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: Say hello
	// assistant: Hello from sluice.
}
