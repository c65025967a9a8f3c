package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercentFor(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 3 * mb, floor: 32 * mb, base: 100, want: 966}, // goal 3 MB × 10.66 ≈ 32 MB
		{live: 8 * mb, floor: 32 * mb, base: 100, want: 300},
		{live: 16 * mb, floor: 32 * mb, base: 100, want: 100}, // twice the live heap is the floor: the default
		{live: 200 * mb, floor: 32 * mb, base: 100, want: 100},
		{live: 12 * mb, floor: 32 * mb, base: 200, want: 200}, // never below what was set
		{live: 0, floor: 32 * mb, base: 100, want: 100},
	} {
		if got := percentFor(tc.live, tc.floor, tc.base); got != tc.want {
			t.Errorf("percentFor(%d MB live, %d MB floor, %d) = %d, want %d", tc.live/mb, tc.floor/mb, tc.base, got, tc.want)
		}
	}
}

// gogc reads the collector's percentage without changing it.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// collectUntil collects until ok holds, with a generous bound: the
// finalizer that re-reads the live heap runs after a collection, on a
// goroutine of its own.
func collectUntil(t *testing.T, what string, ok func(int64) bool) {
	t.Helper()
	for range 1000 {
		runtime.GC()
		runtime.Gosched()
		if ok(gogc()) {
			return
		}
	}
	t.Fatalf("%s: after 1000 collections the percentage is %d", what, gogc())
}

// Not parallel: the collector's percentage is the process's.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	const floor = 32 << 20
	stop := Floor(func(string) string { return "" }, floor)
	collectUntil(t, "small live heap", func(p int64) bool { return p > 500 })
	hold := make([]byte, 24<<20) // twice this is above the floor
	collectUntil(t, "24 MB live", func(p int64) bool { return p == 100 })
	runtime.KeepAlive(hold)
	hold = nil
	collectUntil(t, "live heap freed", func(p int64) bool { return p > 500 })

	stop()
	if got := gogc(); got != 100 {
		t.Errorf("after stop the percentage is %d, want the 100 it found", got)
	}
	for range 3 {
		runtime.GC()
		runtime.Gosched()
	}
	if got := gogc(); got != 100 {
		t.Errorf("a collection after stop set the percentage to %d", got)
	}
}

func TestGOGCWins(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	env := func(k string) string {
		if k == "GOGC" {
			return "150"
		}
		return ""
	}
	Percent(env, 50)
	Floor(env, 1<<40)()
	runtime.GC()
	if got := gogc(); got != 100 {
		t.Errorf("with GOGC set the percentage is %d, want it left at 100", got)
	}
	Percent(func(string) string { return "" }, 50)
	if got := gogc(); got != 50 {
		t.Errorf("Percent without GOGC: %d, want 50", got)
	}
}
