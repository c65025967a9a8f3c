//go:build !unix

package sdkbench

import "time"

// cpuTime is not measured here: the CPU-time metrics are left out.
func cpuTime() time.Duration { return 0 }
