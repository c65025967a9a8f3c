package main

import (
	"runtime/debug"
	"testing"
)

// Not parallel: the GC percentage is the process's.
func TestOneShotGC(t *testing.T) {
	for _, tc := range []struct {
		gogc string
		want int
	}{
		{gogc: "", want: 50},
		{gogc: "100", want: 100}, // the user's GOGC wins: left as the runtime set it
		{gogc: "off", want: 100},
	} {
		prev := debug.SetGCPercent(100)
		oneShotGC(func(key string) string {
			if key == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(prev); got != tc.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", tc.gogc, got, tc.want)
		}
	}
}
