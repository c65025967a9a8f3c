package deathsig

import (
	"os/exec"
	"syscall"
)

// platform: Linux has the parent-death signal, which needs no process
// beside the guard.
var platform mechanism = signalGuard

// signalGuard: the kernel sends the guard SIGUSR1 when the thread that
// started it exits (see Start), and the guard's trap kills the group.
// SIGUSR1 is not a signal that sluice sends to a group (SIGTERM, SIGKILL),
// so a kill by timeout or abort still gives the command its grace.
func signalGuard(cmd *exec.Cmd, j job) (string, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGUSR1}
	return `trap 'kill -KILL 0' USR1; ` + j.traps() + j.run + ` & wait $!`, nil
}
