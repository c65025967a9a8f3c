//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import "io"

// holdTypeahead is a no-op where sluice does not set the terminal up by
// hand (Windows, Solaris, ...): typed-ahead keys may echo there.
func holdTypeahead(io.Reader) func() { return nil }
