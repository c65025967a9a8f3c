package model

import (
	"context"
	"iter"
	"testing"
	"testing/synctest"
)

// script is a Provider whose stream is one function.
type script func(ctx context.Context, yield func(Part, error) bool)

func (script) Name() string { return "script" }

func (f script) Stream(ctx context.Context, req *Request) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) { f(ctx, yield) }
}

func (script) Complete(context.Context, *Request) (*Response, error) { panic("not called") }

// A part reaches the consumer as soon as the provider has it, not when
// more follow: here the provider sends the next part only once the
// consumer has seen the one before (a batching handoff would deadlock,
// which synctest reports).
func TestHandoffPassesEachPartAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		seen := make(chan int)
		p := script(func(ctx context.Context, yield func(Part, error) bool) {
			for i := range 3 {
				if !yield(Part{Type: PartBlockDelta, Delta: DeltaText, Index: i}, nil) {
					return
				}
				if got := <-seen; got != i {
					t.Errorf("the consumer saw part %d after part %d was sent", got, i)
				}
			}
			yield(Part{Type: PartMessageStop}, nil)
		})
		n := 0
		for part, err := range Stream(t.Context(), p, &Request{}, StreamOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if part.Type == PartBlockDelta {
				seen <- part.Index
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d deltas, want 3", n)
		}
	})
}

// The provider reads a bounded number of parts ahead of a consumer that is
// busy with one: a stream the consumer holds back stays on the socket.
func TestHandoffReadsAheadBoundedly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sent := 0
		p := script(func(ctx context.Context, yield func(Part, error) bool) {
			for sent = 1; ; sent++ {
				if !yield(Part{Type: PartBlockDelta, Delta: DeltaText, Text: "x"}, nil) {
					return
				}
			}
		})
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range Stream(t.Context(), p, &Request{}, StreamOptions{}) {
				<-release // busy with the first part until released
				break
			}
		}()
		synctest.Wait()
		// The consumer holds the batch it took (the part it is busy
		// with among them), the queue is full, one put waits for room.
		if max := 2*handoffMax + 1; sent > max {
			t.Errorf("the provider sent %d parts while the consumer held the first, want at most %d", sent, max)
		}
		close(release)
		<-done
	})
}
