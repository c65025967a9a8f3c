package crashtest

import (
	"syscall"
	"testing"
)

// mountSmallDisk mounts a 256 KiB tmpfs on dir for the test, or skips it.
func mountSmallDisk(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("this test mounts a tmpfs, which needs CAP_SYS_ADMIN: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
}
