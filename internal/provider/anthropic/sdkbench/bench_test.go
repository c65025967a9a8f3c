package sdkbench

import (
	"bytes"
	"context"
	"io"
	"iter"
	"net/http"
	"os"
	"runtime"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/model"
)

// BenchmarkDecode decodes the largest recorded stream into a whole message,
// with this package and, in the same run, with anthropic-sdk-go's
// ssestream.Stream + Message.Accumulate over the same bytes.
func BenchmarkDecode(b *testing.B) {
	raw, err := os.ReadFile("../testdata/thinking_web_search_citations.sse")
	if err != nil {
		b.Fatal(err)
	}
	events := bytes.Count(raw, []byte("\ndata: ")) + 1 // the first line is an event line

	b.Run("sluice", func(b *testing.B) {
		measure(b, raw, events, func() {
			var acc model.Accumulator
			anthropic.DecodeStream(bytes.NewReader(raw), func(p model.Part, err error) bool {
				if err != nil {
					b.Fatal(err)
				}
				if err := acc.Add(p); err != nil {
					b.Fatal(err)
				}
				return true
			})
			if len(acc.Response().Content) != 17 {
				b.Fatal("wrong message")
			}
		})
	})

	// The same, through model.Stream: the provider's goroutine and the
	// hand-over of each part to the consumer.
	b.Run("sluice+Stream", func(b *testing.B) {
		p := bytesProvider{raw: raw}
		opts := model.StreamOptions{MaxRetries: -1, FallbackAfter: -1}
		measure(b, raw, events, func() {
			var acc model.Accumulator
			for part, err := range model.Stream(context.Background(), p, &model.Request{}, opts) {
				if err != nil {
					b.Fatal(err)
				}
				if err := acc.Add(part); err != nil {
					b.Fatal(err)
				}
			}
			if len(acc.Response().Content) != 17 {
				b.Fatal("wrong message")
			}
		})
	})

	b.Run("anthropic-sdk-go", func(b *testing.B) {
		measure(b, raw, events, func() {
			resp := &http.Response{
				Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body:   io.NopCloser(bytes.NewReader(raw)),
			}
			stream := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
			var msg sdk.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					b.Fatal(err)
				}
			}
			if stream.Err() != nil || len(msg.Content) != 17 {
				b.Fatal("wrong message", stream.Err())
			}
		})
	})
}

// measure runs decodeOnce b.N times and reports bytes/s, events/s and
// allocations per event, and events per second of CPU time (all threads:
// the garbage collector's and, for sluice+Stream, the provider goroutine's
// work included), which other processes on a shared machine do not skew.
func measure(b *testing.B, raw []byte, events int, decodeOnce func()) {
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	n := 0
	for b.Loop() {
		decodeOnce()
		n++
	}
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(events*n)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events*n), "allocs/event")
	if cpu > 0 {
		b.ReportMetric(float64(events*n)/cpu.Seconds(), "events/cpu-s")
	}
}

// bytesProvider streams a recorded body, as the provider does once the
// response has arrived.
type bytesProvider struct {
	raw []byte
}

func (bytesProvider) Name() string { return "bytes" }

func (p bytesProvider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		anthropic.DecodeStream(model.WatchBody(ctx, io.NopCloser(bytes.NewReader(p.raw))), yield)
	}
}

func (bytesProvider) Complete(context.Context, *model.Request) (*model.Response, error) {
	panic("not used")
}
