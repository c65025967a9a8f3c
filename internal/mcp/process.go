package mcp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/internal/deathsig"
)

// stderrKeep is how much of a server's stderr is kept for error reports.
const stderrKeep = 4 << 10

// process is a stdio server's process. It runs under a guard shell
// (package deathsig) that leads a process group of its own and kills the
// whole group when sluice dies, kill -9 included: what the server started
// (npx starts node, uvx starts python) would otherwise outlive sluice
// unless it happened to exit when its stdin closed. The server replaces
// the guard's background subshell, so its stdin and stdout are the pipes
// themselves, and the guard exits with the server's status (128+n when a
// signal killed it); stopping the group stops the server and its children.
//
// stdin and stdout carry the protocol; stderr is not shown but its tail is
// kept, because a server that fails to start usually says why there.
type process struct {
	cmd *exec.Cmd
	// Our ends of the pipes. Both the session and stop close them,
	// possibly at the same time: the first close counts.
	stdin  *closeOnce
	stdout *closeOnce
	stderr *tail

	done      chan struct{} // closed once Wait has returned
	signalled atomic.Bool   // stop had to signal it
}

// startProcess starts sc's command in dir with the process's environment
// filtered by the child-process policy (package childenv; allow names the
// secret-looking variables passed anyway) plus sc.Env, passed as written.
// waitDelay bounds how long Wait keeps reading stderr after the guard has
// exited, for descendants that left the group holding it.
func startProcess(sc ServerConfig, dir string, env childenv.Policy, waitDelay time.Duration) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The child has its own copies; ours would keep the pipes open after
	// it exits, and reading stdout would never see EOF.
	defer inR.Close()
	cmd, err := deathsig.CommandArgs(context.Background(), dir, sc.Command, sc.Args, inR)
	if err != nil {
		inW.Close()
		return nil, err
	}
	cmd.Env = env.Environ(os.Environ(), sc.Env)
	p := &process{cmd: cmd, stderr: &tail{max: stderrKeep}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = waitDelay

	outR, outW, err := os.Pipe()
	if err != nil {
		inW.Close()
		return nil, err
	}
	cmd.Stdout = outW
	waited := make(chan error, 1)
	err = deathsig.Start(cmd, waited)
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p.stdin, p.stdout = &closeOnce{File: inW}, &closeOnce{File: outR}
	go func() {
		<-waited // how it ended is in cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// stop ends the process as the MCP spec asks of a client: close its stdin,
// wait for it to exit, then SIGTERM, then SIGKILL, grace apart; the signals
// go to the whole group. Whatever is left in the group is killed at the
// end, even when the server itself exited on its own. stop returns once the
// process has been reaped. It may be called more than once, but not
// concurrently.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	pid := p.cmd.Process.Pid
	if !p.waitFor(grace) {
		p.signalled.Store(true)
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		p.waitFor(grace)
	}
	// The group ID cannot have been reused while a member lived; when the
	// group is empty this is a no-op (ESRCH).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
	p.stdout.Close()
}

// waitFor reports whether the process exits within d.
func (p *process) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// exited reports whether the process has ended and, when it ended on its
// own rather than by stop's signals, how ("exit status 3").
func (p *process) exited() (bool, string) {
	select {
	case <-p.done:
	default:
		return false, ""
	}
	if p.signalled.Load() || p.cmd.ProcessState == nil {
		return true, ""
	}
	return true, p.cmd.ProcessState.String()
}

// tail is an io.Writer that keeps the last max bytes written to it. It is
// safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		p = p[len(p)-t.max:]
		t.buf = t.buf[:0]
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// lastLines returns up to n of the last non-empty lines, valid UTF-8, at
// most max bytes.
func (t *tail) lastLines(n, max int) string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	s = strings.ToValidUTF8(s, "\uFFFD")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, "\r \t"); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = strings.ToValidUTF8(out[len(out)-max:], "")
	}
	return out
}

// closeOnce is a file whose Close closes it the first time and does
// nothing after, so that two owners may close it without an error.
type closeOnce struct {
	*os.File
	once sync.Once
	err  error
}

func (c *closeOnce) Close() error {
	c.once.Do(func() { c.err = c.File.Close() })
	return c.err
}
