// Package gctune paces the garbage collector for the kind of process a
// command is, when the environment does not (GOGC set wins, always).
//
// Go's default, GOGC=100, lets the heap grow to twice what is live before
// it collects, with a 4 MB minimum goal. Two of sluice's commands sit at
// the ends of that. A one-prompt headless run lives for a moment with 1–2
// MB live: its cost is its peak RSS, which the minimum goal filled with
// garbage would set, so it collects sooner (Percent). A server lives for
// days with a few MB live and allocates for every delta to every client:
// at twice the live heap it collects several times a second, and the
// deltas that meet a collection are its slowest, so it lets the heap grow
// to a floor first (Floor) — bounded, unlike a higher GOGC, which would
// also multiply a large live heap.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Percent sets the collector's percentage to pct, unless getenv("GOGC")
// is set (the runtime has applied it then).
func Percent(getenv func(string) string, pct int) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(pct)
	}
}

// Floor keeps the collector's heap goal at about floor bytes or more:
// while twice the live heap is below floor, the percentage after each
// collection is what makes the goal floor; above it, the default 100.
// Unless getenv("GOGC") is set, when Floor does nothing. stop ends it and
// restores the percentage it found.
func Floor(getenv func(string) string, floor uint64) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	base := debug.SetGCPercent(100)
	t := &floorTuner{floor: floor, base: base}
	t.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t.adjust()
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.stopped = true
			debug.SetGCPercent(base)
		}
	}
}

// floorTuner re-reads the live heap after every collection: a finalizer
// on an object it keeps unreachable runs once per cycle and sets the next.
type floorTuner struct {
	floor uint64
	base  int

	mu      sync.Mutex // guards what follows, so that stop's restore is the last word
	stopped bool
	sample  []metrics.Sample
	pct     int
}

// sentinel is big enough not to share a tiny-allocator block, whose
// finalizer would wait for its neighbours.
type sentinel struct{ _ [32]byte }

func (t *floorTuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.adjust() {
			t.arm()
		}
	})
}

// adjust sets the percentage for the live heap now; false once stopped.
func (t *floorTuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return true
	}
	if pct := percentFor(t.sample[0].Value.Uint64(), t.floor, t.base); pct != t.pct {
		t.pct = pct
		debug.SetGCPercent(pct)
	}
	return true
}

// percentFor is the percentage that makes the heap goal floor for a live
// heap of live bytes, and never below base.
func percentFor(live, floor uint64, base int) int {
	if live == 0 || 2*live >= floor {
		return base
	}
	// Bounded: the runtime keeps the percentage in an int32.
	return max(int(min((floor-live)*100/live, 1<<24)), base)
}
