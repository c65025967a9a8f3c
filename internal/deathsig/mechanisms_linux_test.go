package deathsig

// mechanisms are the guards this platform can run: Linux tests the pipe
// guard of the other Unixes too.
var mechanisms = map[string]mechanism{"signal": signalGuard, "pipe": pipeGuard}
