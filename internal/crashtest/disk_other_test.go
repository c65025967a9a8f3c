//go:build !linux

package crashtest

import "testing"

// mountSmallDisk skips the test: a small disk is a Linux tmpfs mount here.
func mountSmallDisk(t *testing.T, _ string) {
	t.Skip("this test mounts a Linux tmpfs")
}
