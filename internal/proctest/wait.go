package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PIDsWritten waits, until deadline, for each named file in dir to hold
// the pid that writer (a command under test) put there, and kills those
// processes when the test ends, so that a failing test leaves none behind.
func PIDsWritten(t testing.TB, dir, writer string, deadline time.Time, names ...string) []int {
	t.Helper()
	var pids []int
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	for _, name := range names {
		for {
			data, _ := os.ReadFile(filepath.Join(dir, name))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never wrote its %s's pid", writer, name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return pids
}

// WaitGone waits, until deadline, for every one of pids (processes of
// what) to be gone after the process that ran them was killed.
func WaitGone(t testing.TB, pids []int, what string, deadline time.Time) {
	t.Helper()
	for _, pid := range pids {
		for Alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of %s outlived the process that ran it (%v)", pid, what, pids)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
