// Package deathsig starts child processes that die with this process,
// however it dies (kill -9 included): shell command lines run under a guard
// shell that kills its whole process group when this process is gone.
//
// How the guard learns it: on Linux, from the parent-death signal
// (SysProcAttr.Pdeathsig) that the kernel sends it; on every other Unix
// (macOS, the BSDs), from end-of-file on a pipe whose only write end this
// process holds, which the kernel closes when the process ends, however it
// ends. Either way, what leaves the group (setsid, a daemon that detaches)
// is out of the guard's reach, and a command that has already ended leaves
// no guard behind: jobs it left running are no longer watched.
package deathsig

import (
	"context"
	"os"
	"os/exec"
	"runtime"
)

// Command returns a shell (bash, or /bin/sh where bash is missing) that
// runs line under a guard: the shell leads a process group of its own,
// runs line in the background (as bash -c would parse it, with $0 argv0)
// and waits for it, and exits with its status; when this process dies,
// the guard kills the whole group. stdin, when not nil, is line's standard
// input (otherwise /dev/null, a background command's); the caller closes
// its own copy once the command has started. ctx is exec.CommandContext's.
// Start the command with Start.
func Command(ctx context.Context, argv0, line string, stdin *os.File) (*exec.Cmd, error) {
	shell, err := exec.LookPath("bash")
	if err != nil {
		shell = "/bin/sh"
	}
	cmd := exec.CommandContext(ctx, shell)
	if err := guard(cmd, platform, argv0, line, stdin); err != nil {
		return nil, err
	}
	return cmd, nil
}

// Start starts cmd and sends its wait error to waited, on a goroutine
// locked to its OS thread until the command has ended: Linux sends the
// parent-death signal when the *thread* that forked the child exits, and a
// Go thread may exit (when a goroutine ends while locked to it) while the
// process lives on. cmd's Pdeathsig is the caller's to set (Command sets
// it where it is the mechanism); elsewhere the lock costs nothing.
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
