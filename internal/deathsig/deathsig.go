// Package deathsig starts child processes whose parent-death signal
// (SysProcAttr.Pdeathsig) holds for as long as they run.
package deathsig

import (
	"os/exec"
	"runtime"
)

// Start starts cmd and sends its wait error to waited, on a goroutine
// locked to its OS thread until the command has ended: Linux sends the
// parent-death signal when the *thread* that forked the child exits, and a
// Go thread may exit (when a goroutine ends while locked to it) while the
// process lives on. cmd's Pdeathsig is the caller's to set.
func Start(cmd *exec.Cmd, waited chan<- error) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	return <-started
}
