//go:build !linux

package main

import "io"

// holdTypeahead is a no-op where the terminal is not set up by hand.
func holdTypeahead(io.Reader) func() { return nil }
