package printmode

import (
	"context"
	"sync"
)

// queue is an unbounded FIFO: the host's reader pushes without ever
// waiting on the turn that pops, so that it goes on reading interrupts
// and answers while a turn runs. What it holds is bounded by the host's
// input, which the host sent.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	ready  chan struct{} // has a value when items or closed changed
}

func newQueue[T any]() *queue[T] { return &queue[T]{ready: make(chan struct{}, 1)} }

func (q *queue[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.signal()
}

func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the next value; false once the queue is closed and empty,
// or ctx is done.
func (q *queue[T]) pop(ctx context.Context) (T, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			var zero T
			q.items[0] = zero
			q.items = q.items[1:]
			q.mu.Unlock()
			return v, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			var zero T
			return zero, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			var zero T
			return zero, false
		}
	}
}

// snapshot returns a copy of what the queue holds.
func (q *queue[T]) snapshot() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]T(nil), q.items...)
}
