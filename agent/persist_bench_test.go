package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/store"
)

// BenchmarkPersistedDelta measures one streamed text delta through a whole
// session that persists to a JSONL store: the model part, the event, and
// making it durable. Compare with store=none for the cost of durability.
func BenchmarkPersistedDelta(b *testing.B) {
	const deltas = 2000
	chunks := make([]string, deltas)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("token%d ", i)
	}
	for _, persisted := range []bool{false, true} {
		name := "store=none"
		if persisted {
			name = "store=jsonl"
		}
		b.Run(name, func(b *testing.B) {
			script := modeltest.NewScript()
			opts := agent.Options{Provider: script, WorkDir: b.TempDir(), Stream: modeltest.StreamOptions(), Tools: nil}
			if persisted {
				opts.Store = store.NewJSONL(b.TempDir())
			}
			sess, err := agent.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer sess.Close()
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				script.Push(modeltest.Answer(fmt.Sprint("m", n), chunks...))
				n++
				if _, err := sess.Run(ctx, "go"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*deltas), "ns/delta")
		})
	}
}
