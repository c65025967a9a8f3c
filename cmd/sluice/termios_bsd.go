//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// The ioctls that read and set a terminal's attributes (holdTypeahead):
// macOS and the BSDs name them TIOCGETA and TIOCSETA.
const getTermios, setTermios = unix.TIOCGETA, unix.TIOCSETA
