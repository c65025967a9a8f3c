package tools

import (
	"context"
	"encoding/json"
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
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/tool"
)

// failAfter bounds how long a test waits for something that should happen
// at once; reaching it is a failure, never the expected outcome.
const failAfter = 30 * time.Second

type runResult struct {
	res tool.Result
	err error
}

// startBash runs b in the background and returns the channel its outcome
// arrives on.
func startBash(ctx context.Context, t *testing.T, b *Bash, env *tool.Env, command string, out tool.Output) <-chan runResult {
	t.Helper()
	p := params(t, map[string]any{"command": command})
	done := make(chan runResult, 1)
	go func() {
		res, err := b.Run(ctx, env, p, out)
		done <- runResult{res, err}
	}()
	return done
}

func TestBashResults(t *testing.T) {
	t.Parallel()
	dir, _ := workDir(t)
	tests := []struct {
		name    string
		command string
		environ []string
		want    string
		isError bool
	}{
		{name: "output", command: "echo hello", want: "hello"},
		{name: "no output", command: "true", want: ""},
		{name: "trailing newlines trimmed", command: `printf 'a\n\n\n'`, want: "a"},
		{name: "stdout and stderr merged", command: "echo out; echo err >&2", want: "out\nerr"},
		{name: "exit status", command: "echo out; echo err >&2; exit 3", want: "out\nerr\nexit status 3", isError: true},
		{name: "exit status without output", command: "exit 1", want: "exit status 1", isError: true},
		{name: "killed by a signal", command: "kill -9 $$", want: "signal: killed", isError: true},
		{name: "runs in the working directory", command: "pwd", want: dir},
		{name: "stdin is empty", command: "cat; echo done", want: "done"},
		{name: "environment", command: "echo $SLUICE_TEST", environ: []string{"SLUICE_TEST=yes"}, want: "yes"},
		{name: "bash features", command: "a=(x y z); echo ${#a[@]} ${a[1]}", want: "3 y"},
		{name: "multi-byte output", command: `printf '\xe2\x82'; printf '\xac\n'`, want: "€"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := &tool.Env{WorkDir: dir, Environ: tt.environ}
			out := &recorder{}
			res, err := (&Bash{}).Run(context.Background(), env, params(t, map[string]any{"command": tt.command}), out)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Content != tt.want || res.IsError != tt.isError {
				t.Errorf("got %q (IsError %v); want %q (IsError %v)", res.Content, res.IsError, tt.want, tt.isError)
			}
			if streamed := strings.TrimRight(out.String(), "\n"); !strings.HasPrefix(res.Content, streamed) {
				t.Errorf("streamed %q, but the result is %q", streamed, res.Content)
			}
		})
	}
}

func TestBashInvalidCalls(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		env    *tool.Env
		params string
		want   error
	}{
		{"not an object", context.Background(), env, `["ls"]`, ErrInvalidParams},
		{"not JSON", context.Background(), env, `{"command":`, ErrInvalidParams},
		{"empty command", context.Background(), env, `{"command": "  "}`, ErrInvalidParams},
		{"wrong type", context.Background(), env, `{"command": 1}`, ErrInvalidParams},
		{"no working directory", context.Background(), &tool.Env{}, `{"command": "ls"}`, ErrNoWorkDir},
		{"missing working directory", context.Background(), &tool.Env{WorkDir: filepath.Join(dir, "missing")}, `{"command": "ls"}`, os.ErrNotExist},
		{"cancelled before it starts", cancelled, env, `{"command": "ls"}`, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := (&Bash{}).Run(tt.ctx, tt.env, json.RawMessage(tt.params), &recorder{})
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v; want %v", err, tt.want)
			}
		})
	}
}

// TestBashStreams checks that output reaches the Output while the command
// still runs: the command prints, then blocks on a FIFO that the test opens
// only once it has seen the first output.
func TestBashStreams(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &recorder{}
	done := startBash(ctx, t, &Bash{}, env, "echo first; read line < gate; echo second $line", out)
	select {
	case <-out.seen("first\n"):
	case r := <-done:
		t.Fatalf("the command ended before its output streamed: %+v", r)
	case <-time.After(failAfter):
		t.Fatal("no output streamed while the command ran")
	}
	w, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	if r.err != nil || r.res.Content != "first\nsecond go" {
		t.Errorf("got %q, %v; want %q", r.res.Content, r.err, "first\nsecond go")
	}
	if got := out.String(); got != "first\nsecond go\n" {
		t.Errorf("streamed %q", got)
	}
}

// TestBashAbortKillsTheGroup checks that cancelling ctx kills what the shell
// started. The started process holds a FIFO open for writing; the test's read
// of it ends (EOF) only when that process is gone.
func TestBashAbortKillsTheGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
	}{
		{"background job", `{ echo ready; exec sleep 1000; } 3>held & wait`},
		{"pipeline", `{ echo ready; exec sleep 1000; } 3>held | cat`},
		{"ignoring SIGTERM", `trap '' TERM; { echo ready; exec sleep 1000; } 3>held & wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, env := workDir(t)
			held := filepath.Join(dir, "held")
			if err := syscall.Mkfifo(held, 0o600); err != nil {
				t.Fatal(err)
			}
			// Open the read end first, so that the child's open for writing
			// does not block.
			r, err := os.OpenFile(held, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &recorder{}
			done := startBash(ctx, t, &Bash{KillGrace: time.Millisecond}, env, tt.command, out)
			select {
			case <-out.seen("ready"):
			case res := <-done:
				t.Fatalf("ended early: %+v", res)
			case <-time.After(failAfter):
				t.Fatal("the command never got ready")
			}
			cancel()
			res := <-done
			if !errors.Is(res.err, context.Canceled) {
				t.Errorf("err = %v; want context.Canceled", res.err)
			}
			if !res.res.IsError || res.res.Content != "ready\nCommand aborted" {
				t.Errorf("result %+v; want the output so far and the abort", res.res)
			}
			if err := r.SetReadDeadline(time.Now().Add(failAfter)); err != nil {
				t.Fatal(err)
			}
			if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("read %d, %v: the process the shell started is still alive", n, err)
			}
		})
	}
}

func TestBashTimeout(t *testing.T) {
	t.Parallel()
	_, env := workDir(t)
	res, err := (&Bash{KillGrace: time.Millisecond}).Run(context.Background(), env,
		params(t, map[string]any{"command": "echo started; exec sleep 1000", "timeout": 1}), &recorder{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.IsError || !strings.HasSuffix(res.Content, "Command timed out after 1ms") {
		t.Errorf("got %+v; want a timeout", res)
	}
}

func TestBashLargeOutputIsBounded(t *testing.T) {
	t.Parallel()
	_, env := workDir(t)
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	out := &recorder{}
	res, err := (&Bash{MaxOutput: 1000}).Run(context.Background(), env, params(t, map[string]any{"command": "seq 1 200000"}), out)
	if err != nil || res.IsError {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if out.String() != want.String() {
		t.Errorf("streamed %d bytes; want all %d", len(out.String()), want.Len())
	}
	if !strings.HasPrefix(res.Content, "1\n2\n3\n") || !strings.HasSuffix(res.Content, "199999\n200000") ||
		!strings.Contains(res.Content, "bytes of output elided") || len(res.Content) > 1100 {
		t.Errorf("result (%d bytes) is not the bounded head and tail: %.200q", len(res.Content), res.Content)
	}
}

// TestBashBackgroundJob checks that a job left running with the output open
// does not hold the call: the output is drained and closed.
func TestBashBackgroundJob(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := (&Bash{DrainGrace: time.Millisecond}).Run(context.Background(), env,
		params(t, map[string]any{"command": "(read x < gate; echo late) & echo main"}), &recorder{})
	// Let the job finish: it reads the gate, then dies writing to the closed
	// output.
	w, werr := os.OpenFile(gate, os.O_WRONLY, 0)
	if werr != nil {
		t.Fatal(werr)
	}
	_, _ = w.WriteString("\n")
	w.Close()
	if err != nil || res.Content != "main" || res.IsError {
		t.Errorf("got %+v, %v; want main", res, err)
	}
}

func TestCopyOutputHoldsPartialCharacters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   []string // Chunks the Output receives.
	}{
		{"split character", []string{"a\xe2\x82", "\xac"}, []string{"a", "€"}},
		{"split emoji", []string{"\xf0\x9f", "\x98", "\x80!"}, []string{"😀!"}},
		{"incomplete at the end", []string{"x\xe2"}, []string{"x", "\xe2"}},
		{"invalid bytes pass", []string{"\xff\xfe"}, []string{"\xff\xfe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			out := &recorder{}
			kept := newHeadTail(100)
			done := make(chan struct{})
			go func() {
				defer close(done)
				copyOutput(r, out, kept)
			}()
			sent := ""
			for _, s := range tt.writes {
				if _, err := w.WriteString(s); err != nil {
					t.Fatal(err)
				}
				sent += s
				// Wait until the copier has passed on what is complete, so
				// that the next write is a separate read.
				if n := completeRunes([]byte(sent)); n > 0 {
					select {
					case <-out.seen(sent[:n]):
					case <-time.After(failAfter):
						t.Fatalf("%q not passed on", sent[:n])
					}
				}
			}
			w.Close()
			<-done
			var got []string
			for _, c := range out.chunks {
				got = append(got, string(c))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("chunks %q; want %q", got, tt.want)
			}
			for _, c := range got[:len(got)-1] {
				if !utf8.ValidString(c) && utf8.ValidString(sent) {
					t.Errorf("chunk %q splits a character", c)
				}
			}
			if kept.String() != sent {
				t.Errorf("kept %q; want %q", kept.String(), sent)
			}
		})
	}
}

func TestBashTimeoutParam(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		in   *float64
		want time.Duration
	}{
		{nil, DefaultTimeout},
		{f(0), DefaultTimeout},
		{f(-5), DefaultTimeout},
		{f(1500), 1500 * time.Millisecond},
		{f(0.5), 500 * time.Microsecond},
		{f(600000), MaxTimeout},
		{f(1e300), MaxTimeout},
	}
	for _, tt := range tests {
		in := bashInput{Timeout: tt.in}
		if got := in.timeout(); got != tt.want {
			t.Errorf("timeout(%v) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

func TestBashCompact(t *testing.T) {
	t.Parallel()
	tests := []struct{ params, want string }{
		{`{"command": "go test ./..."}`, "go test ./..."},
		{`{"command": "  ls -la  \n"}`, "ls -la"},
		{`{"command": "cd x\nmake"}`, "cd x …"},
		{`{"command": 1}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := (&Bash{}).Compact(json.RawMessage(tt.params)); got != tt.want {
			t.Errorf("Compact(%s) = %q; want %q", tt.params, got, tt.want)
		}
	}
}

// bashParent runs a long command that starts a job of its own, and is
// killed by TestBashDiesWithSluice while it runs.
func bashParent(dir string) {
	command := `sleep 1000 & echo $! > job; echo $$ > shell; sleep 1000`
	p, _ := json.Marshal(map[string]any{"command": command, "timeout": 600000})
	_, _ = (&Bash{}).Run(context.Background(), &tool.Env{WorkDir: dir}, p, nil)
}

// TestBashDiesWithSluice: a kill -9 of the process running a Bash call
// leaves none of the call's processes running.
func TestBashDiesWithSluice(t *testing.T) {
	t.Parallel()
	dir, _ := workDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), "SLUICE_TEST_BASH_PARENT="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	})
	deadline := time.Now().Add(failAfter)
	pids := proctest.PIDsWritten(t, dir, "the command", deadline, "job", "shell")
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	proctest.WaitGone(t, pids, "the call", deadline)
}
