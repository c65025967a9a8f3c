package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

// BenchmarkDeltaThroughTheLog is what the log adds to a delta's delivery:
// the owner's fenced publish (until the stream's ack, when the owner's own
// clients get it) and a follower's receipt (when another node's clients
// get it), one delta at a time on a loopback NATS server. It reports the
// p50 and p99 of both.
func BenchmarkDeltaThroughTheLog(b *testing.B) {
	l := benchLog(b)
	const s = "bench"
	w, err := l.Writer(b.Context(), s)
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range answer(s, 0) {
		if err := w.Append(b.Context(), ev); err != nil {
			b.Fatal(err)
		}
	}
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	go l.Follow(ctx, s, 2, func(protocol.Event) error { got <- time.Now(); return nil })
	acked := make([]time.Duration, 0, b.N)
	followed := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		sent := time.Now()
		if err := w.Append(b.Context(), chunk(s, int64(3+i), "word ")); err != nil {
			b.Fatal(err)
		}
		acked = append(acked, time.Since(sent))
		followed = append(followed, (<-got).Sub(sent))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"ack", acked}, {"follower", followed}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}
