package rpc_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/rpc/rpctest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// countingProvider counts the parts its consumer has taken.
type countingProvider struct {
	*modeltest.Script
	taken atomic.Int64
}

func (p *countingProvider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		for part, err := range p.Script.Stream(ctx, req) {
			p.taken.Add(1)
			if !yield(part, err) {
				return
			}
		}
	}
}

// TestHostNotReadingHoldsTheStream: with MaxQueuedBytes, a host that stops
// reading holds its session's model stream back (the agent takes no more
// parts than the bound and the buffers between allow), and once it reads
// again it gets the whole answer.
func TestHostNotReadingHoldsTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const chunk, n, bound = 1 << 10, 400, 16 << 10
		chunks := make([]string, n)
		for i := range chunks {
			chunks[i] = strings.Repeat(string(rune('a'+i%26)), chunk)
		}
		p := &countingProvider{Script: modeltest.NewScript(modeltest.Answer("m1", chunks...))}
		dir := t.TempDir()
		srv := rpc.NewServer(rpc.Options{
			NewSession: func(context.Context, rpc.SessionConfig) (agent.Options, error) {
				return agent.Options{Provider: p, Stream: modeltest.StreamOptions(), WorkDir: dir, AutoCompact: -1}, nil
			},
			WorkDir: dir, MaxQueuedBytes: bound,
		})
		srvSide, host := rpctest.Pipe(0)
		served := make(chan error, 1)
		go func() { served <- srv.ServeConn(context.Background(), srvSide) }()
		ctx := context.Background()
		host.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		if _, err := host.Read(ctx); err != nil {
			t.Fatal(err)
		}
		host.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"sendMessage","params":{"text":"talk"}}`))

		synctest.Wait() // the host reads nothing: everything waits for it
		// The agent took at most the bound's worth of deltas, the parts
		// buffered before it, and the events the connection holds.
		if taken := p.taken.Load(); taken > 2*bound/chunk+32 {
			t.Fatalf("the agent took %d of %d parts for a host that reads nothing", taken, n+4)
		}

		var text strings.Builder
		for {
			line, err := host.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Method string `json:"method"`
				Params struct {
					Chunk string `json:"chunk"`
				} `json:"params"`
			}
			json.Unmarshal(line, &m)
			text.WriteString(m.Params.Chunk)
			if m.Method == "turnEnded" {
				break
			}
		}
		if got, want := text.String(), strings.Join(chunks, ""); got != want {
			t.Fatalf("the host got %d bytes of the %d-byte answer", len(got), len(want))
		}
		host.Close()
		<-served
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
