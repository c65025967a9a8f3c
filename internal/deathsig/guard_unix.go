//go:build unix

package deathsig

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// A mechanism makes cmd a guard that learns of this process's death, and
// returns the guard's script around j. Each one uses the wait builtin: a
// shell runs traps only between commands, and wait is interrupted by a
// trapped signal.
type mechanism func(cmd *exec.Cmd, j job) (string, error)

// A job is what a guard runs and how.
type job struct {
	// run is the command, to run in the background (redirections and &
	// still to add).
	run string
	// outlastTerm makes the guard (and its watcher) ignore SIGTERM, so
	// that a SIGTERM to the group reaches the command alone and the guard
	// goes on waiting for it, however long a graceful stop takes, and ends
	// with the command's status. run must then set SIGTERM back to its
	// default (trap - TERM) before anything else: an ignored signal stays
	// ignored across exec.
	outlastTerm bool
}

// traps is what the guard's script starts with.
func (j job) traps() string {
	if j.outlastTerm {
		return `trap '' TERM; `
	}
	return ""
}

// guard makes cmd, a shell with no arguments yet, run line under a guard
// built by m. stdin, when not nil, becomes the command's fd 0. The line is
// parsed by eval exactly as bash -c would parse it; the shell variables
// holding it (and the watcher's pid) are the only trace.
func guard(cmd *exec.Cmd, m mechanism, argv0, line string, stdin *os.File) error {
	return guardRun(cmd, m, job{run: `__sluice_command=$1; set --; { eval "$__sluice_command"; }`}, stdin, argv0, line)
}

// guardArgv makes cmd, a shell with no arguments yet, run the program
// argv[0] with argv[1:] under a guard built by m. argv reaches the
// program as the guard's positional parameters, "$@", which no shell
// parses, so any bytes pass as they are. exec replaces the background
// subshell with the program: nothing stands between it and its files. The
// guard outlasts a SIGTERM to the group (job.outlastTerm), which the
// program gets with its default action: the guard exits when the program
// does, with the program's status.
// argv[0] must be a path that cannot be read as an option (it starts with
// / or ./): exec takes none, but a word beginning with - would be one.
func guardArgv(cmd *exec.Cmd, m mechanism, argv []string, stdin *os.File) error {
	return guardRun(cmd, m, job{run: `{ trap - TERM; exec "$@"; }`, outlastTerm: true}, stdin, append([]string{argv[0]}, argv...)...)
}

// guardRun makes cmd run j under a guard built by m, with args as the
// shell's $0 and positional parameters.
func guardRun(cmd *exec.Cmd, m mechanism, j job, stdin *os.File, args ...string) error {
	if stdin != nil {
		fd := 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, stdin)
		j.run += fmt.Sprintf(" <&%d %d<&-", fd, fd)
	}
	script, err := m(cmd, j)
	if err != nil {
		return fmt.Errorf("deathsig: %w", err)
	}
	cmd.Args = append(append(cmd.Args, "-c", script), args...)
	return nil
}

// deathPipe is the read end handed to every pipe guard and the write end
// kept open for the process's lifetime. Both stay referenced here: an
// unreferenced *os.File is closed by its finalizer, and a closed write end
// would kill every guarded command at once.
var deathPipe struct {
	once sync.Once
	r, w *os.File
	err  error
}

// pipeGuard: the guard starts a watcher that reads a pipe nobody writes
// to. End-of-file comes when the last write end closes, and the only one
// is this process's (close-on-exec, never passed to a child), which the
// kernel closes when the process ends, however it ends; the watcher then
// kills the group. It costs one forked shell per command, for as long as
// the command runs.
func pipeGuard(cmd *exec.Cmd, j job) (string, error) {
	deathPipe.once.Do(func() {
		deathPipe.r, deathPipe.w, deathPipe.err = os.Pipe()
	})
	if deathPipe.err != nil {
		return "", deathPipe.err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fd := 3 + len(cmd.ExtraFiles)
	closeOthers := "" // the watcher holds none of the command's files
	for i := range cmd.ExtraFiles {
		closeOthers += fmt.Sprintf(" %d<&-", 3+i)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, deathPipe.r)
	// The watcher's output is not the command's, so that it never keeps
	// that open; the guard kills it once the command has ended, and exits
	// with the command's status.
	return fmt.Sprintf(`%[4]s{ read -r __sluice_eof <&%[1]d; kill -KILL 0; } </dev/null >/dev/null 2>&1%[2]s & __sluice_watch=$!; `+
		`%[3]s %[1]d<&- & wait $!; __sluice_status=$?; kill -KILL $__sluice_watch 2>/dev/null; exit $__sluice_status`,
		fd, closeOthers, j.run, j.traps()), nil
}
