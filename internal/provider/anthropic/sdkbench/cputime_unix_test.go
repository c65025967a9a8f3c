//go:build unix

package sdkbench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, all threads. On a shared
// machine a benchmark's wall time counts the time other processes held the
// CPU; its CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
