package agent_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// A session with a model (here a scripted provider; in a program, one of
// the providers), run to the end of one user message.
func Example() {
	provider := modeltest.NewScript(modeltest.Answer("m1", "Hello", ", world."))
	sess, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer sess.Close()

	res, err := sess.Run(context.Background(), "Say hello")
	fmt.Println(res.Text, res.StopReason, err)
	for _, m := range sess.Messages().Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// Hello, world. end_turn <nil>
	// user: Say hello
	// assistant: Hello, world.
}

// A face follows a session with SnapshotAndSubscribe: the state so far,
// then every event after it, in seq order, applied with the one reducer.
func ExampleSession_SnapshotAndSubscribe() {
	provider := modeltest.NewScript(modeltest.Answer("m1", "Hi", " there"))
	sess, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer sess.Close()

	snap, sub := sess.SnapshotAndSubscribe(agent.SubscribeOptions{})
	defer sub.Close()
	list := protocol.NewList(snap)
	ctx := context.Background()
	h, err := sess.Submit(ctx, "Greet me")
	if err != nil {
		panic(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			panic(err)
		}
		if err := list.Apply(ev); err != nil {
			panic(err)
		}
		if _, delta := ev.(protocol.AssistantContentUpdated); !delta {
			// Deltas of one block may arrive merged when the reader lags,
			// so how many there are is not fixed; their text is.
			fmt.Println(ev.Method())
		}
		if rs, ok := ev.(protocol.RunStateChanged); ok && rs.State == protocol.RunIdle {
			break
		}
	}
	res, _ := h.Wait(ctx)
	fmt.Println(list.At(1).Text(), list.Seq() == sess.Seq(), res.Text == list.At(1).Text())
	// Output:
	// runStateChanged
	// userMessageAdded
	// assistantMessageAdded
	// turnEnded
	// runStateChanged
	// Hi there true true
}

type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

// A custom tool joins the built-in ones through Options.ExtraTools; the
// model calls it by name.
func ExampleOptions_extraTools() {
	weather, err := tool.NewFunc(tool.Func[weatherInput]{
		Name:        "Weather",
		Description: "Reports today's weather for a city.",
		Kind:        tool.ReadOnly, // runs without asking in every permission mode
		Run: func(ctx context.Context, env *tool.Env, in weatherInput, out tool.Output) (tool.Result, error) {
			return tool.Result{Content: in.City + ": sunny, 24°C"}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	provider := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "call_1", "Weather", map[string]any{"city": "Lisbon"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "It is sunny in Lisbon."),
	)
	sess, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir(), ExtraTools: []tool.Tool{weather}})
	if err != nil {
		panic(err)
	}
	defer sess.Close()

	res, err := sess.Run(context.Background(), "Weather in Lisbon?")
	fmt.Println(res.Text, res.Turns, err)
	tb := sess.Messages().Messages[1].Blocks[0]
	fmt.Println(tb.Name, tb.Result, *tb.Success)
	// Output:
	// It is sunny in Lisbon. 2 <nil>
	// Weather Lisbon: sunny, 24°C true
}
