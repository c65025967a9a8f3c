package model_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Stream sends a request through a provider (here a scripted one; in a
// program, the Anthropic or OpenAI provider) with retries and the stall
// watchdog, and yields its parts as they arrive; an Accumulator builds the
// whole response from them.
func ExampleStream() {
	provider := modeltest.NewScript(modeltest.Answer("msg_1", "Hello", ", world."))
	req := &model.Request{Messages: []model.Message{{
		Role:    model.RoleUser,
		Content: []model.Content{{Type: model.ContentText, Text: "Say hello"}},
	}}}
	var acc model.Accumulator
	for part, err := range model.Stream(context.Background(), provider, req, modeltest.StreamOptions()) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if part.Type == model.PartBlockDelta {
			fmt.Printf("delta %q\n", part.Text)
		}
		if err := acc.Add(part); err != nil {
			panic(err)
		}
	}
	res := acc.Response()
	fmt.Println(res.Content[0].Text, res.StopReason)
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world. end_turn
}
