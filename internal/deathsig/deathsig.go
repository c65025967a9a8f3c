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
	"path/filepath"
	"runtime"
	"strings"
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
	cmd := exec.CommandContext(ctx, guardShell())
	if err := guard(cmd, platform, argv0, line, stdin); err != nil {
		return nil, err
	}
	return cmd, nil
}

// CommandArgs is Command for a program rather than a shell line, run in
// dir (the process's own when empty): the guard runs name with args, which
// reach it byte for byte (they are the guard's positional parameters,
// never parsed by a shell), and the program replaces the guard's
// background subshell, so its stdin (as Command's), stdout and stderr are
// the guard's files themselves, with nothing copying in between. name is
// looked up as exec.Command would run it (in PATH when it has no slash,
// otherwise relative to dir) and a program that is not there, or not
// executable, is the error, as it is Start's for exec.Command; one that
// the exec still fails makes the guard exit with status 126 or 127 and the
// shell's complaint on stderr. The guard's status is the program's, 128+n
// for a program killed by signal n.
func CommandArgs(ctx context.Context, dir, name string, args []string, stdin *os.File) (*exec.Cmd, error) {
	path, err := programPath(dir, name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, guardShell())
	cmd.Dir = dir
	if err := guardArgv(cmd, platform, append([]string{path}, args...), stdin); err != nil {
		return nil, err
	}
	return cmd, nil
}

// programPath is name as exec.Command would run it in dir, checked to be
// an executable file, and made a word that exec cannot take for an
// option: absolute, or relative starting with "./".
func programPath(dir, name string) (string, error) {
	if !strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	if filepath.IsAbs(name) {
		_, err := exec.LookPath(name)
		return name, err
	}
	if _, err := exec.LookPath(filepath.Join(dir, name)); err != nil {
		return "", err
	}
	return "./" + name, nil
}

// guardShell is bash, or /bin/sh where bash is missing.
func guardShell() string {
	if shell, err := exec.LookPath("bash"); err == nil {
		return shell
	}
	return "/bin/sh"
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
