package model

import (
	"context"
	"errors"
	"iter"
	"testing"
	"testing/synctest"
	"time"
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

// TestHandoffAttemptEnds: however the provider's stream goes on or ends,
// the attempt passes on every part in order and ends as the stream does,
// at once (no watchdog's time passes in the bubble): the queue filling up
// and emptying again (the provider waits for room, and must be woken),
// the stream ending without a message stop (ErrIncomplete, not an idle
// timeout), or ending with an error after some parts.
func TestHandoffAttemptEnds(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		deltas  int
		end     func(yield func(Part, error) bool) // after the deltas
		holdAt  int                                // the consumer waits for the provider to block at this delta; -1 never
		late    bool                               // the stream ends only once the consumer has the last delta
		wantErr error                              // the first attempt's failure; nil: it ends with a message stop
	}{
		{name: "fills the queue", deltas: 3*handoffMax + 5, holdAt: 0,
			end: func(yield func(Part, error) bool) { yield(Part{Type: PartMessageStop}, nil) }},
		{name: "fills the queue twice", deltas: 5 * handoffMax, holdAt: 2 * handoffMax,
			end: func(yield func(Part, error) bool) { yield(Part{Type: PartMessageStop}, nil) }},
		{name: "no message stop", deltas: 3, holdAt: -1, end: func(func(Part, error) bool) {}, wantErr: ErrIncomplete},
		{name: "no message stop after a full queue", deltas: 2*handoffMax + 1, holdAt: 0, end: func(func(Part, error) bool) {}, wantErr: ErrIncomplete},
		{name: "no message stop, late", deltas: 2, holdAt: -1, late: true, end: func(func(Part, error) bool) {}, wantErr: ErrIncomplete},
		{name: "an error", deltas: 4, holdAt: -1, end: func(yield func(Part, error) bool) { yield(Part{}, boom) }, wantErr: boom},
		{name: "an error, late", deltas: 1, holdAt: -1, late: true, end: func(yield func(Part, error) bool) { yield(Part{}, boom) }, wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				hasLast := make(chan struct{})
				p := script(func(ctx context.Context, yield func(Part, error) bool) {
					for i := range tt.deltas {
						if !yield(Part{Type: PartBlockDelta, Delta: DeltaText, Index: i}, nil) {
							return
						}
					}
					if tt.late {
						select {
						case <-hasLast:
						case <-ctx.Done():
							return
						}
					}
					tt.end(yield)
				})
				start := time.Now()
				next := 0
				var gotErr error
				stopped := false
				for part, err := range Stream(t.Context(), p, &Request{}, StreamOptions{MaxRetries: 1}) {
					if err != nil {
						t.Fatalf("after %d deltas: %v", next, err)
					}
					switch part.Type {
					case PartBlockDelta:
						if part.Index != next {
							t.Fatalf("delta %d, want %d", part.Index, next)
						}
						if next == tt.holdAt {
							synctest.Wait() // the provider fills the queue and waits for room
						}
						if next == tt.deltas-1 && tt.late {
							close(hasLast)
						}
						next++
						continue
					case PartRetry:
						gotErr = part.Retry.Err
					case PartMessageStop:
						stopped = true
					default:
						t.Fatalf("part %v after %d deltas", part.Type, next)
					}
					break
				}
				if next != tt.deltas {
					t.Errorf("%d deltas passed on, want %d", next, tt.deltas)
				}
				if tt.wantErr == nil && (!stopped || gotErr != nil) {
					t.Errorf("the attempt failed (%v), want it to end with its message stop", gotErr)
				}
				if tt.wantErr != nil && !errors.Is(gotErr, tt.wantErr) {
					t.Errorf("the attempt failed with %v, want %v", gotErr, tt.wantErr)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("the attempt took %v of the bubble's time, want none", d)
				}
			})
		})
	}
}
