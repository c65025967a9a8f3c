package profdump

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestDump: unset, nothing happens; set, SIGUSR1 writes the statistics
// and profiles, counted, and stop leaves a CPU profile.
func TestDump(t *testing.T) {
	stop, err := Start(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	dir := t.TempDir()
	stop, err = Start(func(k string) string { return map[string]string{Env: dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 2; want++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			var st Stats
			b, err := os.ReadFile(filepath.Join(dir, "memstats.json"))
			if err == nil && json.Unmarshal(b, &st) == nil && st.Dumps == want {
				if st.HeapAlloc == 0 || st.Goroutines == 0 {
					t.Fatalf("dump %d: %+v", want, st)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no dump %d in a minute (last %s, %v)", want, b, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stop()
	for _, name := range []string{"cpu.pprof", "heap.pprof", "goroutine.pprof"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
