//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// holdTypeahead keeps keys typed while the interactive agent starts (MCP
// servers starting, a session loading) for the terminal UI: the terminal's
// line discipline would otherwise echo them above the banner and turn Enter
// into a newline the UI reads as ctrl+j. It turns off echo, line editing
// and CR-to-NL translation now — Bubble Tea sets the same when it starts —
// and keeps signals and output processing, so ctrl+c still works and
// start-up notices print normally. The returned function restores the
// terminal; nil when in is not a terminal.
func holdTypeahead(in io.Reader) func() {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, getTermios)
	if err != nil {
		return nil // not a terminal
	}
	t := *old
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.IEXTEN
	t.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, setTermios, &t) != nil {
		return nil
	}
	return func() { _ = unix.IoctlSetTermios(fd, setTermios, old) }
}
