//go:build unix && !linux

package proctest

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether pid exists. There is no /proc to tell a zombie
// from a running process; a zombie counts as alive, which errs towards a
// failing test, and orphans are reaped by launchd (init) at once.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Children lists pid's child processes, from ps (no /proc here).
func Children(pid int) []int {
	out, _ := exec.Command("ps", "-A", "-o", "pid=,ppid=").Output()
	var children []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == strconv.Itoa(pid) {
			children = append(children, f[0])
		}
	}
	return pids(strings.Join(children, " "))
}
