package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// A face follows a session through the handle: a snapshot at seq N, then
// the events N+1, N+2, ... applied with the one reducer, while it sends the
// session commands. The same code drives a session another cluster node
// runs.
func Example() {
	provider := modeltest.NewScript(modeltest.Answer("m1", "Hello", ", world."))
	as, err := agent.New(agent.Options{Provider: provider, WorkDir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	var s session.Session = session.Local(as)
	defer s.Close()

	ctx := context.Background()
	snap, sub := s.SnapshotAndSubscribe()
	defer sub.Close()
	list := protocol.NewList(snap)
	next := snap.Seq + 1
	if _, err := s.Submit(ctx, "Say hello", false); err != nil {
		panic(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			panic(err)
		}
		// Deltas of one block may arrive merged when the reader lags: the
		// merged event spans FirstSeq..Seq, and nothing is skipped.
		if h := ev.Head(); h.From() != next {
			panic(fmt.Sprintf("gap: expected seq %d, got %d", next, h.From()))
		}
		next = ev.Head().Seq + 1
		if err := list.Apply(ev); err != nil {
			panic(err)
		}
		if rs, ok := ev.(protocol.RunStateChanged); ok && rs.State == protocol.RunIdle {
			break
		}
	}
	fmt.Println(list.At(1).Text(), list.Seq() == s.Seq(), s.Owner() == "")
	// Output:
	// Hello, world. true true
}
