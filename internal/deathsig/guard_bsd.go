//go:build unix && !linux

package deathsig

// platform: macOS has no parent-death signal (Go offers one only on Linux
// and FreeBSD), so the guard watches the death pipe; the BSDs do the same,
// one mechanism for all of them.
var platform mechanism = pipeGuard
