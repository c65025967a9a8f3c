package session_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// TestLocalJobs: a message's Job says how its work ended — answered in a
// run of its own after the one going when it was sent, or dropped unsent
// by an abort — and Wait returns once Done is closed.
func TestLocalJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		abort bool
	}{{"queued", false}, {"dropped", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gate := make(chan struct{})
			provider := modeltest.NewScript(
				modeltest.Response([]modeltest.Step{{Gate: gate}}, modeltest.Answer("m1", "first")),
				modeltest.Answer("m2", "second"),
			)
			as, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			s := session.Local(as)
			defer s.Close()

			_, sub := s.SnapshotAndSubscribe()
			defer sub.Close()
			firstID, first, err := s.SubmitMessage(ctx, "one")
			if err != nil {
				t.Fatal(err)
			}
			// The second waits behind the first, whose model response is
			// held at the gate once its message is in.
			for {
				ev, err := sub.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if u, ok := ev.(protocol.UserMessageAdded); ok && u.Message.ID == firstID {
					break
				}
			}
			secondID, second, err := s.SubmitMessage(ctx, "two")
			if err != nil {
				t.Fatal(err)
			}
			if tc.abort {
				if err := s.Abort(ctx, "test"); err != nil {
					t.Fatal(err)
				}
			}
			close(gate)
			res, err := second.Wait(ctx)
			switch {
			case tc.abort:
				if !res.Dropped || res.MessageID != "" || !errors.Is(err, agent.ErrAborted) {
					t.Fatalf("dropped message: %+v, %v", res, err)
				}
			default:
				if err != nil || res.Dropped || res.MessageID != secondID || res.SteeredInto != "" || res.Text != "second" {
					t.Fatalf("second message: %+v, %v", res, err)
				}
			}
			res, err = first.Wait(ctx)
			if tc.abort {
				if res.Dropped || res.MessageID != firstID {
					t.Fatalf("aborted run: %+v, %v (it ran: not dropped)", res, err)
				}
				return
			}
			if err != nil || res.MessageID != firstID || res.Text != "first" || res.StopReason != "end_turn" || res.Turns != 1 {
				t.Fatalf("first message: %+v, %v", res, err)
			}
			select {
			case <-first.Done():
			default:
				t.Fatal("Wait returned before Done was closed")
			}
		})
	}
}

// TestLocalInterruptKeepsTheQueue: Interrupt ends the run going, as Abort
// does, but the message queued behind it still runs; a thinking budget
// set between reaches the next request; Subagents lists the Agent tool's
// kinds, general-purpose first.
func TestLocalInterruptKeepsTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := make(chan struct{})
	provider := modeltest.NewScript(
		modeltest.Response([]modeltest.Step{{Gate: gate}}, modeltest.Answer("m1", "first")),
		modeltest.Answer("m2", "second"),
	)
	as, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir(),
		Subagents: []agent.Subagent{{Name: "reviewer", Description: "Reviews code.", Model: "haiku"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := session.Local(as)
	defer s.Close()

	subs := s.Subagents()
	if len(subs) != 2 || subs[0].Name != agent.GeneralPurpose.Name || subs[1] != (session.Subagent{Name: "reviewer", Description: "Reviews code.", Model: "haiku"}) {
		t.Fatalf("Subagents() = %+v", subs)
	}

	_, sub := s.SnapshotAndSubscribe()
	defer sub.Close()
	firstID, first, err := s.SubmitMessage(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := ev.(protocol.UserMessageAdded); ok && u.Message.ID == firstID {
			break
		}
	}
	secondID, second, err := s.SubmitMessage(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetThinkingBudget(ctx, 2048); err != nil {
		t.Fatal(err)
	}
	if err := s.Interrupt(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if _, err := first.Wait(ctx); err == nil {
		t.Fatal("the interrupted run ended without an error")
	}
	res, err := second.Wait(ctx)
	if err != nil || res.Dropped || res.MessageID != secondID || res.Text != "second" {
		t.Fatalf("the queued message after the interrupt: %+v, %v", res, err)
	}
	if got := provider.Request(provider.Count() - 1).ThinkingBudget; got != 2048 {
		t.Fatalf("the next request's thinking budget is %d, want 2048", got)
	}
}
