package printmode

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
)

// gatedWriter takes writes until one carries a text delta, then nothing
// until open is closed: a reader that stopped reading once the answer
// began.
type gatedWriter struct {
	open    chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	stopped bool
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	stopped := w.stopped
	w.stopped = w.stopped || bytes.Contains(p, []byte(`"text_delta"`))
	w.mu.Unlock()
	if stopped {
		<-w.open
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestSlowStdoutHoldsTheStream: while stdout takes nothing, the model's
// stream waits once about maxPendingOutput waits to be written, instead of
// the whole answer piling up in memory; once stdout takes again, every
// delta is written.
func TestSlowStdoutHoldsTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		chunks := make([]string, 600)
		for i := range chunks {
			chunks[i] = strings.Repeat(string(rune('a'+i%26)), 1<<10)
		}
		sess, err := agent.New(agent.Options{
			Provider: modeltest.NewScript(modeltest.Answer("m1", chunks...)),
			WorkDir:  t.TempDir(),
			Stream:   modeltest.StreamOptions(),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		out := &gatedWriter{open: make(chan struct{})}
		open := sync.OnceFunc(func() { close(out.open) })
		defer open()
		code := make(chan int, 1)
		go func() {
			code <- Run(context.Background(), sess, "talk", Config{OutputFormat: FormatStreamJSON, IncludePartial: true, Stdout: out})
		}()

		synctest.Wait() // every goroutine blocked: the output on stdout, the stream on the output
		msgs := sess.Messages().Messages
		if len(msgs) != 2 {
			t.Fatalf("%d messages while stdout takes nothing", len(msgs))
		}
		// What waits: the output's 64 KiB buffer, the line being written,
		// maxPendingOutput queued, a delta.
		if streamed, bound := len(msgs[1].Text()), 64<<10+maxPendingOutput+8<<10; streamed > bound {
			t.Errorf("%d bytes of the %d-byte answer streamed while stdout took nothing (bound %d)", streamed, 600<<10, bound)
		}

		open()
		if c := <-code; c != 0 {
			t.Fatalf("exit %d", c)
		}
		text := strings.Join(chunks, "")
		ls := lines(t, out.buf.String())
		var deltas strings.Builder
		for _, l := range ls {
			if l["type"] != "stream_event" {
				continue
			}
			ev, _ := l["event"].(map[string]any)
			if d, _ := ev["delta"].(map[string]any); d["type"] == "text_delta" {
				deltas.WriteString(d["text"].(string))
			}
		}
		if deltas.String() != text {
			t.Errorf("the text deltas written add up to %d bytes, want the %d-byte answer", deltas.Len(), len(text))
		}
	})
}
