package web

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/protocol"
)

// BenchmarkStream measures the whole path in one process: a local model
// server, the Anthropic provider, the agent, the rpc server, the outbox and
// the WebSocket, to 20 clients streaming a 20 KB answer each at once. The
// bytes per op are the answers delivered. (cmd/loadcheck measures a real
// `sluice serve` process from outside.)
func BenchmarkStream(b *testing.B) {
	b.Run("flat-out", func(b *testing.B) { benchStream(b, 0) })
	// Paced at 2 ms a chunk, deltas arrive one by one and the outbox's
	// window does the merging.
	b.Run("paced", func(b *testing.B) { benchStream(b, 2*time.Millisecond) })
}

func benchStream(b *testing.B, pace time.Duration) {
	const clients, size = 20, 20_000
	answer := fakemodel.NumberedAnswer(size)
	want := strings.Join(answer, "")
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer { return fakemodel.Answer{Text: answer, Pace: pace} })
	defer fm.Close()
	st := newStack(b, anthropic.New(anthropic.Config{APIKey: "bench", BaseURL: fm.URL()}), stackOptions{})
	ctx := context.Background()
	b.SetBytes(int64(clients * len(want)))
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				benchClient(b, ctx, st, want)
			}()
		}
		wg.Wait()
	}
}

func benchClient(b *testing.B, ctx context.Context, st *stack, want string) {
	c, _, err := websocket.Dial(ctx, st.wsURL(), nil)
	if err != nil {
		b.Error(err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	var list protocol.List
	write := func(msg string) {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			b.Error(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"sendMessage","params":{"text":"go"}}`)
	running := false
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			b.Error(err)
			return
		}
		ev, err := protocol.DecodeNotification(data)
		if err != nil {
			continue // a response
		}
		if err := list.Apply(ev); err != nil {
			b.Error(err)
			return
		}
		if rs, ok := ev.(protocol.RunStateChanged); ok {
			if rs.State == protocol.RunRunning {
				running = true
			} else if running {
				break
			}
		}
	}
	if got := list.At(list.Len() - 1).Text(); got != want {
		b.Errorf("answer of %d bytes, want %d", len(got), len(want))
	}
}
