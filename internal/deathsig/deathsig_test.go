//go:build unix

package deathsig

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/proctest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("SLUICE_TEST_GUARD_PARENT"); dir != "" {
		// The parent process of TestDiesWithParent, killed while the
		// command runs.
		guardParent(dir, os.Getenv("SLUICE_TEST_GUARD_SHELL"), mechanisms[os.Getenv("SLUICE_TEST_GUARD_MECHANISM")], os.Getenv("SLUICE_TEST_GUARD_COMMAND") == "argv")
		return
	}
	goleak.VerifyTestMain(m)
}

// failAfter bounds waits for events on a loaded machine; reaching it is a
// failure, never the expected outcome.
const failAfter = 30 * time.Second

// shells are the shells a guard may be: bash, and /bin/sh where bash is
// missing (dash on Debian, bash 3.2 on macOS).
func shells(t *testing.T) []string {
	t.Helper()
	list := []string{"/bin/sh"}
	if bash, err := exec.LookPath("bash"); err == nil {
		list = append(list, bash)
	}
	return list
}

// command is Command with the shell and the mechanism m.
func command(t *testing.T, shell string, m mechanism, line string, stdin *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(shell)
	if err := guard(cmd, m, "argv0", line, stdin); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestGuardRunsTheLine: under each guard a line runs as sh -c would run
// it, with its status, its stdin, and none of the guard's own files.
func TestGuardRunsTheLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, stdin string
		wantOut           string
		wantCode          int
	}{
		{name: "output", line: `echo "$0 $#"; echo err >&2`, wantOut: "argv0 0\nerr\n"},
		{name: "status", line: `exit 3`, wantCode: 3},
		{name: "killed by a signal", line: `exec 2>/dev/null; sh -c 'kill -TERM $$'`, wantCode: 128 + int(syscall.SIGTERM)},
		{name: "stdin", line: `read -r a; echo "got $a"`, stdin: "input\n", wantOut: "got input\n"},
		{name: "empty stdin", line: `cat; echo end`, wantOut: "end\n"},
		{name: "no extra fds", line: `for fd in 3 4 5; do (: <&$fd) 2>/dev/null && echo "fd $fd open"; done; echo checked`, stdin: "x", wantOut: "checked\n"},
		{name: "quoting", line: `printf '%s|' "a b" 'c"d' $((1+1))`, wantOut: `a b|c"d|2|`},
	}
	for _, shell := range shells(t) {
		for name, m := range mechanisms {
			for _, tt := range tests {
				t.Run(filepath.Base(shell)+"/"+name+"/"+tt.name, func(t *testing.T) {
					t.Parallel()
					stdin := stdinOf(t, tt.stdin)
					cmd := command(t, shell, m, tt.line, stdin)
					out, err := cmd.CombinedOutput()
					code := 0
					var exitErr *exec.ExitError
					if errors.As(err, &exitErr) {
						code = exitErr.ExitCode()
					} else if err != nil {
						t.Fatal(err)
					}
					if string(out) != tt.wantOut || code != tt.wantCode {
						t.Fatalf("got %q, status %d; want %q, status %d", out, code, tt.wantOut, tt.wantCode)
					}
				})
			}
		}
	}
}

// TestGuardRunsTheProgram: under each guard a program gets its arguments
// byte for byte, whatever they hold, its stdin as given, none of the
// guard's own files, and the guard exits with its status.
func TestGuardRunsTheProgram(t *testing.T) {
	t.Parallel()
	printf, err := exec.LookPath("printf")
	if err != nil {
		t.Fatal(err)
	}
	// Every argument printed between brackets. No argument can hold a NUL
	// byte: execve takes C strings.
	each := []string{printf, `[%s]`}
	odd := []string{"", " ", "a b", `'`, `"`, `\`, `\n`, "$HOME", "${x:-y}", "$(echo no)", "`echo no`", "*", "~",
		"a\nb", "\xff\xfe non-UTF-8 \xc3", "-n", "--", ";", "&&", "|", ">out", "<in", "#", "!", "\t\r"}
	var oddOut strings.Builder
	for _, a := range odd {
		oddOut.WriteString("[" + a + "]")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "-n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "-n", "prog"), []byte("#!/bin/sh\necho \"${0##*/} $#\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		argv     []string
		stdin    string
		wantOut  string
		wantCode int
	}{
		{name: "arguments", argv: append(each, odd...), wantOut: oddOut.String()},
		{name: "no arguments", argv: []string{"/bin/sh", "-c", `echo "$#"`}, wantOut: "0\n"},
		{name: "a path that looks like an option", argv: []string{"./-n/prog", "a"}, wantOut: "prog 1\n"},
		{name: "status", argv: []string{"/bin/sh", "-c", "exit 3"}, wantCode: 3},
		{name: "killed by a signal", argv: []string{"/bin/sh", "-c", "kill -TERM $$"}, wantCode: 128 + int(syscall.SIGTERM)},
		{name: "not executable", argv: []string{"./-n"}, wantCode: 126},
		{name: "stdin", argv: []string{"/bin/sh", "-c", `read -r a; echo "got $a"`}, stdin: "input\n", wantOut: "got input\n"},
		{name: "stdin untouched", argv: []string{"/bin/sh", "-c", "cat"}, stdin: "\x00\xff\nno newline", wantOut: "\x00\xff\nno newline"},
		{name: "no extra fds", argv: []string{"/bin/sh", "-c", `for fd in 3 4 5; do (: <&$fd) 2>/dev/null && echo "fd $fd open"; done; echo checked`}, stdin: "x", wantOut: "checked\n"},
	}
	for _, shell := range shells(t) {
		for name, m := range mechanisms {
			for _, tt := range tests {
				t.Run(filepath.Base(shell)+"/"+name+"/"+tt.name, func(t *testing.T) {
					t.Parallel()
					stdin := stdinOf(t, tt.stdin)
					cmd := exec.Command(shell)
					if err := guardArgv(cmd, m, tt.argv, stdin); err != nil {
						t.Fatal(err)
					}
					cmd.Dir = dir
					var stderr strings.Builder
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					code := 0
					var exitErr *exec.ExitError
					if errors.As(err, &exitErr) {
						code = exitErr.ExitCode()
					} else if err != nil {
						t.Fatal(err)
					}
					if string(out) != tt.wantOut || code != tt.wantCode {
						t.Fatalf("got %q, status %d; want %q, status %d (stderr %q)", out, code, tt.wantOut, tt.wantCode, stderr.String())
					}
				})
			}
		}
	}
}

// TestGuardOutlastsTerm: a SIGTERM to a guarded program's group (how
// sluice stops an MCP server) leaves the guard waiting for the program,
// which handles it in its own time, and the guard exits with the
// program's status. The program's output is a pipe, and it has no stderr:
// Wait waits for the guard alone.
func TestGuardOutlastsTerm(t *testing.T) {
	t.Parallel()
	program := `trap 'echo term; exit 7' TERM; echo ready; while :; do sleep 1 >/dev/null & wait $!; done`
	for _, shell := range shells(t) {
		for name, m := range mechanisms {
			t.Run(filepath.Base(shell)+"/"+name, func(t *testing.T) {
				t.Parallel()
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				cmd := exec.Command(shell)
				if err := guardArgv(cmd, m, []string{"/bin/sh", "-c", program}, nil); err != nil {
					t.Fatal(err)
				}
				cmd.Stdout = w
				err = cmd.Start()
				w.Close()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
				out := bufio.NewReader(r)
				if line, err := out.ReadString('\n'); line != "ready\n" {
					t.Fatalf("the program printed %q (%v), want ready", line, err)
				}
				if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				waited := make(chan error, 1)
				go func() { waited <- cmd.Wait() }()
				select {
				case err = <-waited:
				case <-time.After(failAfter):
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("the guard did not end %v after SIGTERM: %v", failAfter, <-waited)
				}
				rest, _ := io.ReadAll(out)
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 || string(rest) != "term\n" {
					t.Fatalf("the guard ended with %v, the program printing %q; want exit status 7 and term", err, rest)
				}
			})
		}
	}
}

// TestCommandArgs: CommandArgs looks a bare name up in PATH and any other
// relative to its directory, fails as exec.Command's Start fails on a
// program that is missing or not executable, and runs the program through
// Start.
func TestCommandArgs(t *testing.T) {
	t.Parallel()
	if _, err := CommandArgs(context.Background(), "", "sluice-no-such-program", nil, nil); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("a missing program: %v, want exec.ErrNotFound", err)
	}
	dir := t.TempDir()
	for _, name := range []string{filepath.Join(dir, "missing"), "sub/missing", "./missing"} {
		if _, err := CommandArgs(context.Background(), dir, name, nil, nil); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a missing %s: %v, want os.ErrNotExist", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CommandArgs(context.Background(), dir, "./plain", nil, nil); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("a file that is not executable: %v, want os.ErrPermission", err)
	}
	cmd, err := CommandArgs(context.Background(), dir, "sh", []string{"-c", `echo "$1"`, "sh", "a  b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runThroughStart(t, cmd); err != nil || out != "a  b\n" {
		t.Fatalf("got %q, %v; want \"a  b\"", out, err)
	}
}

// TestCommand runs a line as the platform runs it, through Start.
func TestCommand(t *testing.T) {
	t.Parallel()
	cmd, err := Command(context.Background(), "x", `echo "$0"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runThroughStart(t, cmd); err != nil || out != "x\n" {
		t.Fatalf("got %q, %v; want x", out, err)
	}
}

// runThroughStart starts cmd with Start and returns its stdout and wait
// error once it has ended.
func runThroughStart(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	var out strings.Builder
	cmd.Stdout = &out
	waited := make(chan error, 1)
	if err := Start(cmd, waited); err != nil {
		t.Fatal(err)
	}
	err := <-waited
	return out.String(), err
}

// guardParent runs a command that starts a job of its own and never ends:
// a shell line, or with argv a program (a shell) given its arguments.
func guardParent(dir, shell string, m mechanism, argv bool) {
	line := `sleep 1000 & echo $! > job; echo $$ > shell; sleep 1000`
	cmd := exec.Command(shell)
	var err error
	if argv {
		err = guardArgv(cmd, m, []string{"/bin/sh", "-c", line}, nil)
	} else {
		err = guard(cmd, m, "sh", line, nil)
	}
	if err != nil {
		panic(err)
	}
	cmd.Dir = dir
	waited := make(chan error, 1)
	if err := Start(cmd, waited); err != nil {
		panic(err)
	}
	<-waited
}

// TestDiesWithParent: a kill -9 of the process that started a guarded
// command (a line or a program) leaves none of the command's processes
// running, with each shell and each mechanism.
func TestDiesWithParent(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, shell := range shells(t) {
		for name := range mechanisms {
			for _, command := range []string{"line", "argv"} {
				t.Run(filepath.Base(shell)+"/"+name+"/"+command, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					parent := exec.Command(exe, "-test.run=^$")
					parent.Env = append(os.Environ(), "SLUICE_TEST_GUARD_PARENT="+dir, "SLUICE_TEST_GUARD_SHELL="+shell, "SLUICE_TEST_GUARD_MECHANISM="+name, "SLUICE_TEST_GUARD_COMMAND="+command)
					if err := parent.Start(); err != nil {
						t.Fatal(err)
					}
					deadline := time.Now().Add(failAfter)
					var pids []int
					for _, file := range []string{"job", "shell"} {
						for {
							data, _ := os.ReadFile(filepath.Join(dir, file))
							if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
								pids = append(pids, pid)
								break
							}
							if time.Now().After(deadline) {
								_ = parent.Process.Kill()
								_ = parent.Wait()
								t.Fatalf("the command never wrote its %s's pid", file)
							}
							time.Sleep(5 * time.Millisecond)
						}
					}
					// The group is the guard's: whatever a failure leaves
					// running goes with it. ($$ is the guard's pid for a line,
					// the program's for a program.)
					pgid, err := syscall.Getpgid(pids[1])
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
					// Still running while the parent lives: the guard kills only
					// on its parent's death.
					for _, pid := range pids {
						if !proctest.Alive(pid) {
							t.Fatalf("process %d of the command ended while its parent lived", pid)
						}
					}
					if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					_ = parent.Wait()
					for _, pid := range pids {
						for proctest.Alive(pid) {
							if time.Now().After(deadline) {
								t.Fatalf("process %d of the command outlived the process that started it", pid)
							}
							time.Sleep(5 * time.Millisecond)
						}
					}
				})
			}
		}
	}
}

// stdinOf is a pipe that reads s, closed when the test ends; nil for "".
func stdinOf(t *testing.T, s string) *os.File {
	t.Helper()
	if s == "" {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() {
		_, _ = w.WriteString(s)
		w.Close()
	}()
	return r
}
