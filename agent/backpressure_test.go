package agent_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestBoundedSubscriberHoldsTheStream: a subscription with
// MaxPendingBytes that reads nothing holds the model's stream back once
// its queue passes the bound (the run waits, holding no more than the
// bound and a delta), and once it reads, it gets every event: nothing is
// dropped. An unbounded subscriber beside it never holds anything back.
func TestBoundedSubscriberHoldsTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const chunk, bound = 1 << 10, 16 << 10
		chunks := make([]string, 200)
		for i := range chunks {
			chunks[i] = strings.Repeat(string(rune('a'+i%26)), chunk)
		}
		p := modeltest.NewScript(modeltest.Answer("m1", chunks...))
		s := newSession(t, p, nil)
		held := s.Subscribe(agent.SubscribeOptions{MaxPendingBytes: bound})
		defer held.Close()
		idle := s.Subscribe(agent.SubscribeOptions{})
		defer idle.Close()
		ctx := context.Background()
		h, err := s.Submit(ctx, "talk")
		if err != nil {
			t.Fatal(err)
		}

		synctest.Wait() // every goroutine blocked: the run waits for the held subscriber
		select {
		case <-h.Done():
			t.Fatal("the run ended although its bounded subscriber read nothing")
		default:
		}
		msgs := s.Messages().Messages
		if len(msgs) != 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		if shown := len(msgs[1].Text()); shown > bound+2*chunk {
			t.Fatalf("%d bytes streamed while the subscriber held at most %d", shown, bound)
		}

		// Reading releases the stream; the events add up to the answer.
		l := protocol.NewList(protocol.Snapshot{Messages: []protocol.Message{}})
		for {
			ev, err := held.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if _, ok := ev.(protocol.TurnEnded); ok {
				break
			}
		}
		if _, err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := l.At(1).Text(), strings.Join(chunks, ""); got != want {
			t.Fatalf("the held subscriber got %d bytes of the %d-byte answer", len(got), len(want))
		}
		if idle.Pending() == 0 {
			t.Fatal("the unbounded subscriber got nothing")
		}
	})
}

// TestBoundedSubscriberHoldsASubagent: a subagent's stream reaches its
// parent's subscribers, so a bounded one that reads nothing holds the
// child's model stream back too.
func TestBoundedSubscriberHoldsASubagent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const chunk, bound = 1 << 10, 16 << 10
		chunks := make([]string, 200)
		for i := range chunks {
			chunks[i] = strings.Repeat(string(rune('a'+i%26)), chunk)
		}
		p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
			switch {
			case firstText(req) == "child task":
				return modeltest.Answer("c1", chunks...)
			case results(req) == 0:
				return modeltest.Response(modeltest.Start("p1"), modeltest.ToolUse(0, "agent-1", "Agent", map[string]any{
					"description": "do it", "prompt": "child task", "subagent_type": "general-purpose"}), modeltest.Stop("tool_use"))
			}
			return modeltest.Answer("p2", "parent done")
		}}
		s := newSession(t, p, func(o *agent.Options) { o.Subagents = []agent.Subagent{} })
		held := s.Subscribe(agent.SubscribeOptions{MaxPendingBytes: bound})
		defer held.Close()
		ctx := context.Background()
		h, err := s.Submit(ctx, "main task")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-h.Done():
			t.Fatal("the run ended although its bounded subscriber read nothing")
		default:
		}
		shown := 0
		for _, m := range s.Messages().Messages {
			for _, b := range m.Blocks {
				for _, k := range b.Messages {
					shown += len(k.Text())
				}
			}
		}
		if shown > bound+2*chunk {
			t.Fatalf("the subagent streamed %d bytes while the subscriber held at most %d", shown, bound)
		}
		go func() {
			for {
				if _, err := held.Next(ctx); err != nil {
					return
				}
			}
		}()
		res, err := h.Wait(ctx)
		if err != nil || res.Text != "parent done" {
			t.Fatalf("run: %q, %v", res.Text, err)
		}
	})
}
