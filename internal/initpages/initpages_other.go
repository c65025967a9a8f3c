//go:build !linux

package initpages

// Release does nothing outside Linux.
func Release() {}
