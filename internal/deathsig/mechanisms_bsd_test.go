//go:build unix && !linux

package deathsig

// mechanisms are the guards this platform can run.
var mechanisms = map[string]mechanism{"pipe": pipeGuard}
