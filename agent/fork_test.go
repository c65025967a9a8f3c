package agent_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/store"
)

// A fork carries the conversation on under a new id; the original is left
// as it was.
func TestForkLeavesTheOriginal(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(modeltest.Answer("m1", "Hello, Ada."), modeltest.Answer("m2", "You are Ada."))
	opts := agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(), Store: store.NewJSONL(t.TempDir())}
	s, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), "My name is Ada."); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	s.Close()

	f, err := agent.Fork(opts, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.ID() == id || len(f.Messages().Messages) != 2 {
		t.Fatalf("fork %s of %s holds %d messages", f.ID(), id, len(f.Messages().Messages))
	}
	if res, err := f.Run(context.Background(), "Who am I?"); err != nil || res.Text != "You are Ada." {
		t.Fatalf("fork run: %q %v", res.Text, err)
	}
	if n := len(p.Request(1).Messages); n != 3 {
		t.Errorf("the fork's request has %d messages, want the earlier 2 and the new one", n)
	}
	f.Close()

	orig, err := agent.Open(opts, id)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if n := len(orig.Messages().Messages); n != 2 {
		t.Errorf("the original holds %d messages after the fork ran, want 2", n)
	}
	infos, err := agent.ListSessions(context.Background(), opts.Store, opts.WorkDir)
	if err != nil || len(infos) != 2 {
		t.Errorf("sessions %+v, %v: want the original and the fork", infos, err)
	}
}
