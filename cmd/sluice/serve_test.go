package main

import (
	"runtime/debug"
	"testing"
)

// TestServeGC: serve collects less often than Go's default unless the
// environment sets GOGC, which then stands. (Not parallel: the GC percent
// is the process's.)
func TestServeGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	for _, c := range []struct {
		name, gogc string
		want       int
	}{
		{"GOGC unset", "", serveGCPercent},
		{"GOGC set", "150", 100}, // the runtime read GOGC at start; serve leaves it
	} {
		debug.SetGCPercent(100)
		tuneServeGC(func(k string) string {
			if k == "GOGC" {
				return c.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("%s: GC percent %d, want %d", c.name, got, c.want)
		}
	}
}
