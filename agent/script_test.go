package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// newSession starts a session on the provider in a temporary directory.
func newSession(t *testing.T, p model.Provider, mod func(*agent.Options)) *agent.Session {
	t.Helper()
	opts := agent.Options{
		Provider: p,
		WorkDir:  t.TempDir(),
		Stream:   modeltest.StreamOptions(),
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder follows a session like a face does: it applies every event to
// its own protocol.List and keeps them.
type recorder struct {
	t      *testing.T
	sub    *agent.Subscription
	list   *protocol.List
	events []protocol.Event
}

func record(t *testing.T, s *agent.Session) *recorder {
	snap, sub := s.SnapshotAndSubscribe(agent.SubscribeOptions{})
	t.Cleanup(sub.Close)
	return &recorder{t: t, sub: sub, list: protocol.NewList(snap)}
}

// drain applies every event published so far.
func (r *recorder) drain(s *agent.Session) {
	r.t.Helper()
	want := s.Seq()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for r.list.Seq() < want {
		ev, err := r.sub.Next(ctx)
		if err != nil {
			r.t.Fatalf("drain: %v (at seq %d of %d)", err, r.list.Seq(), want)
		}
		r.events = append(r.events, ev)
		if err := r.list.Apply(ev); err != nil {
			r.t.Fatalf("apply %s seq %d: %v", ev.Method(), ev.Head().Seq, err)
		}
	}
}

// waitFor reads events until one satisfies ok.
func (r *recorder) waitFor(what string, ok func(protocol.Event) bool) protocol.Event {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ev, err := r.sub.Next(ctx)
		if err != nil {
			r.t.Fatalf("waiting for %s: %v", what, err)
		}
		r.events = append(r.events, ev)
		if err := r.list.Apply(ev); err != nil {
			r.t.Fatalf("apply %s: %v", ev.Method(), err)
		}
		if ok(ev) {
			return ev
		}
	}
}

// checkMatches asserts that the recorder's list equals the session's
// snapshot: the events describe the state exactly.
func (r *recorder) checkMatches(s *agent.Session) {
	r.t.Helper()
	r.drain(s)
	got, _ := json.Marshal(r.list.Snapshot())
	want, _ := json.Marshal(s.Messages())
	if string(got) != string(want) {
		r.t.Fatalf("list rebuilt from events differs from the snapshot:\n got %s\nwant %s", got, want)
	}
}

func (r *recorder) methods() []string {
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.Method())
	}
	return out
}
