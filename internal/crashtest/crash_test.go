// Package crashtest kills the real sluice binary mid-stream (SIGKILL,
// SIGHUP; print mode, rpc and the terminal UI) and checks what a restore shows and what the model is sent next:
// streamed content is durable as it streams, and no tool process outlives
// sluice (issue 16, items 1 and 2).
package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testbin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { testbin.Cleanup() }))
}

// guard bounds every wait: reaching it is a failure, never the expected
// outcome.
const guard = 60 * time.Second

// model is a fake Anthropic server. The first request gets first's answer
// or, without one, an answer that streams chunk-0001, chunk-0002, ... one
// every 10 ms until the client goes away (its chunks last twice the guard:
// a test that sees them end has failed already); later requests get a
// short text answer. It records the request bodies.
type model struct {
	srv *fakemodel.Server

	mu     sync.Mutex
	bodies [][]byte
}

func newModel(t *testing.T, first *fakemodel.Answer) *model {
	m := &model{}
	chunks := make([]string, 2*guard/(10*time.Millisecond))
	for i := range chunks {
		chunks[i] = fmt.Sprintf("chunk-%04d ", i+1)
	}
	m.srv = fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		m.mu.Lock()
		m.bodies = append(m.bodies, r.Body)
		n := len(m.bodies)
		m.mu.Unlock()
		switch {
		case n > 1:
			return fakemodel.Answer{Text: []string{"Continuing."}}
		case first != nil:
			return *first
		}
		return fakemodel.Answer{Text: chunks, Pace: 10 * time.Millisecond}
	})
	t.Cleanup(m.srv.Close)
	return m
}

// request returns the messages of request i (from 0) as role and the
// texts of its content.
func (m *model) request(t *testing.T, i int) []sent {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.bodies) {
		t.Fatalf("the model got %d requests, want at least %d", len(m.bodies), i+1)
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(m.bodies[i], &req); err != nil {
		t.Fatal(err)
	}
	var out []sent
	for _, msg := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Content   json.RawMessage `json:"content"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
		}
		var text string
		if json.Unmarshal(msg.Content, &text) == nil {
			out = append(out, sent{role: msg.Role, kind: "text", text: text})
			continue
		}
		json.Unmarshal(msg.Content, &blocks)
		for _, b := range blocks {
			s := sent{role: msg.Role, kind: b.Type, text: b.Text}
			if b.Type == "tool_result" {
				s.text = string(b.Content)
				s.isError = b.IsError
			}
			out = append(out, s)
		}
	}
	return out
}

type sent struct {
	role, kind, text string
	isError          bool
}

// env is one sluice home and working directory.
type env struct {
	t    *testing.T
	home string
	wd   string
	url  string
}

func newEnv(t *testing.T, m *model) *env {
	wd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, home: t.TempDir(), wd: wd, url: m.srv.URL()}
}

func (e *env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(testbin.Sluice(e.t), args...)
	cmd.Dir = e.wd
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "SLUICE_HOME=" + e.home,
		"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + e.url,
	}
	return cmd
}

// sessionFile is the session's file once it exists.
func (e *env) sessionFile(id string) string {
	matches, _ := filepath.Glob(filepath.Join(e.home, "projects", "*", id+".jsonl"))
	if len(matches) != 1 {
		e.t.Fatalf("session file of %s: %v", id, matches)
	}
	return matches[0]
}

// waitFile waits until the file holds want and returns when it saw it.
func waitFile(t *testing.T, path, want string) time.Time {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte(want)) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q", path, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lines reads a process's stdout line by line, handing each to a channel.
func lines(t *testing.T, r io.Reader) <-chan string {
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// until returns the first line containing want.
func until(t *testing.T, ch <-chan string, want string) string {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("the output ended before %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no %q on the output", want)
		}
	}
}

// startPrint runs sluice -p with stream-json output and returns the process,
// its output lines and its session id.
func (e *env) startPrint(args ...string) (*exec.Cmd, <-chan string, string) {
	t := e.t
	cmd := e.command(append([]string{"-p", "--output-format", "stream-json", "--include-partial-messages", "--verbose"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("stderr of %v:\n%s", args, stderr.String())
		}
	})
	ch := lines(t, out)
	var init struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal([]byte(until(t, ch, `"session_id"`)), &init)
	if init.SessionID == "" {
		t.Fatal("no session id on the output")
	}
	return cmd, ch, init.SessionID
}

// continueRun runs sluice -p --continue PROMPT to its end and returns its
// combined output.
func (e *env) continueRun(prompt string) string {
	e.t.Helper()
	cmd := e.command("-p", "--continue", prompt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("sluice -p --continue: %v\n%s", err, out)
	}
	return string(out)
}

// TestKilledMidStream: kill -9, or SIGHUP, while an answer streams; the
// next run (--continue) sends the model what streamed, and a restore shows
// it as interrupted.
func TestKilledMidStream(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			m := newModel(t, nil)
			e := newEnv(t, m)
			cmd, out, id := e.startPrint("question")
			until(t, out, "chunk-0020")
			seen := time.Now()
			file := e.sessionFile(id)
			durable := waitFile(t, file, "chunk-0020")
			t.Logf("chunk-0020 was in the session file %v after it reached stdout", durable.Sub(seen))
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if sig == syscall.SIGHUP {
				// SIGHUP ends sluice as SIGTERM does: by itself, not by the
				// signal's default action.
				if ee, ok := err.(*exec.ExitError); ok && !ee.Exited() {
					t.Fatalf("SIGHUP killed sluice (%v) instead of ending it", err)
				}
			}

			shown := e.restore(id)
			if len(shown) != 2 || !strings.HasPrefix(shown[1].text, "chunk-0001 ") || !strings.Contains(shown[1].text, "chunk-0020") ||
				!shown[1].interrupted {
				t.Fatalf("a restore shows %+v; want the question and the streamed answer, interrupted", shown)
			}

			start := time.Now()
			e.continueRun("go on")
			t.Logf("sluice -p --continue after %v took %v", sig, time.Since(start))
			got := m.request(t, 1)
			if len(got) < 3 || got[0].text != "question" || got[1].role != "assistant" ||
				!strings.Contains(got[1].text, "chunk-0020") || got[len(got)-1].text != "go on" {
				t.Fatalf("the model was sent %+v; want the question, the streamed answer, then the next prompt", got)
			}
		})
	}
}

// shownMessage is a restored message as a face shows it.
type shownMessage struct {
	role        string
	text        string
	interrupted bool // it ends with an error block
}

// restore attaches to the stored session through sluice rpc and returns
// its messages.
func (e *env) restore(id string) []shownMessage {
	t := e.t
	t.Helper()
	cmd := e.command("rpc")
	in := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"sessionId":%q}}`+"\n", id)
	cmd.Stdin = strings.NewReader(in)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = e.wd, e.command().Env, strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sluice rpc: %v\n%s", err, out)
	}
	var resp struct {
		Result struct {
			Snapshot struct {
				Messages []struct {
					Role   string `json:"role"`
					Blocks []struct {
						Type    string `json:"type"`
						Content string `json:"content"`
					} `json:"blocks"`
				} `json:"messages"`
			} `json:"snapshot"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.Error != nil {
		t.Fatalf("initialize answered %s (%v)", line, err)
	}
	var shown []shownMessage
	for _, m := range resp.Result.Snapshot.Messages {
		s := shownMessage{role: m.Role}
		for _, b := range m.Blocks {
			if b.Type == "text" {
				s.text += b.Content
			}
		}
		s.interrupted = len(m.Blocks) > 0 && m.Blocks[len(m.Blocks)-1].Type == "error"
		shown = append(shown, s)
	}
	return shown
}

// TestKilledDuringBash: kill -9 while a Bash call runs a command that
// started a job of its own; both are gone, the call is in the session, and
// --continue sends the model a result saying it was interrupted.
func TestKilledDuringBash(t *testing.T) {
	t.Parallel()
	command := `sleep 1000 & echo $! > job; echo $$ > shell; sleep 1000`
	m := newModel(t, &fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_1", Name: "Bash", Input: map[string]string{"command": command}}})
	e := newEnv(t, m)
	cmd, _, id := e.startPrint("--dangerously-skip-permissions", "run it")
	deadline := time.Now().Add(guard)
	pids := proctest.PIDsWritten(t, e.wd, "the command", deadline, "job", "shell")
	waitFile(t, e.sessionFile(id), "toolu_1")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	proctest.WaitGone(t, pids, "the Bash call", deadline)

	e.continueRun("what happened?")
	got := m.request(t, 1)
	var result *sent
	for i := range got {
		if got[i].kind == "tool_result" {
			result = &got[i]
		}
	}
	if result == nil || !result.isError || !strings.Contains(result.text, "interrupted") {
		t.Fatalf("the model was sent %+v; want the Bash call's result saying it was interrupted", got)
	}
}

// TestKilledWithMCPServer: kill -9 while a stdio MCP server runs that
// started a child of its own and ignores its stdin closing; both are gone.
// sluice is still waiting for the server's initialize answer (it gives
// none), so nothing else of sluice's is in the way.
func TestKilledWithMCPServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newModel(t, nil))
	server := `sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > child; echo $$ > server; exec sleep 1000`
	if err := os.WriteFile(filepath.Join(e.wd, "server.sh"), []byte(server), 0o600); err != nil {
		t.Fatal(err)
	}
	config := `{"mcpServers":{"stubborn":{"command":"/bin/sh","args":["server.sh"]}}}`
	cmd := e.command("-p", "--mcp-config", config, "--strict-mcp-config", "hello")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sluice's stderr:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(guard)
	pids := proctest.PIDsWritten(t, e.wd, "the server", deadline, "child", "server")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	proctest.WaitGone(t, pids, "the MCP server", deadline)
}

// TestDiskFull: sluice -p on a disk that fills up while it saves the
// session exits non-zero and says why. The disk is a small tmpfs.
// The behaviour itself is covered without a mount by agent's
// TestSaveFailureFailsTheRun (a store failing like a full disk).
func TestDiskFull(t *testing.T) {
	t.Parallel()
	filler := make([]string, 1000) // 700 KB, more than the disk holds
	for i := range filler {
		filler[i] = strings.Repeat("filler ", 100)
	}
	m := newModel(t, &fakemodel.Answer{Text: filler})
	e := newEnv(t, m)
	mountSmallDisk(t, e.home)
	cmd := e.command("-p", "write a lot")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("sluice -p on a full disk: %v, want exit status 1\n%.2000s", err, out)
	}
	if !strings.Contains(string(out), "the session could not be saved") || !strings.Contains(string(out), "no space left on device") {
		t.Fatalf("sluice -p on a full disk said:\n%.2000s\nwant that the session could not be saved, and why", out)
	}
}

// TestRPCKilledMidStream: kill -9 of sluice rpc while an answer streams to
// the host; a restore shows what reached the wire, and the model gets it.
func TestRPCKilledMidStream(t *testing.T) {
	t.Parallel()
	m := newModel(t, nil)
	e := newEnv(t, m)
	cmd := e.command("rpc")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := lines(t, stdout)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	var init struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(until(t, out, `"sessionId"`)), &init)
	id := init.Result.SessionID
	if id == "" {
		t.Fatal("initialize gave no session id")
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"sendMessage","params":{"text":"question"}}`)
	until(t, out, "chunk-0020")
	waitFile(t, e.sessionFile(id), "chunk-0020")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	shown := e.restore(id)
	if len(shown) != 2 || !strings.Contains(shown[1].text, "chunk-0020") || !shown[1].interrupted {
		t.Fatalf("a restore shows %+v; want the question and the streamed answer, interrupted", shown)
	}
	e.continueRun("go on")
	if got := m.request(t, 1); len(got) < 3 || got[1].role != "assistant" || !strings.Contains(got[1].text, "chunk-0020") {
		t.Fatalf("the model was sent %+v; want the streamed answer as the assistant's", got)
	}
}

// TestTUIKilledMidStream: kill -9 of the terminal UI (in a real
// pseudo-terminal, under tmux) while an answer streams on screen; a
// restore shows what was on screen, interrupted.
func TestTUIKilledMidStream(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	m := newModel(t, nil)
	e := newEnv(t, m)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	args := []string{"new-session", "-d", "-x", "100", "-y", "30", "-s", "t", "-c", e.wd}
	for _, kv := range e.command().Env {
		args = append(args, "-e", kv)
	}
	tmux(append(args, testbin.Sluice(t)+"; sleep 600")...)
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	screenHas := func(s string) {
		t.Helper()
		deadline := time.Now().Add(guard)
		for !strings.Contains(tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t"), s) {
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%s", s, tmux("capture-pane", "-p", "-J", "-t", "t"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	screenHas("✻ sluice")
	tmux("send-keys", "-t", "t", "question", "Enter")
	screenHas("chunk-0020")
	files, _ := filepath.Glob(filepath.Join(e.home, "projects", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	waitFile(t, files[0], "chunk-0020")
	shell, _ := strconv.Atoi(strings.TrimSpace(tmux("display-message", "-p", "-t", "t", "#{pane_pid}")))
	children := proctest.Children(shell)
	if len(children) == 0 {
		t.Fatalf("no sluice process under the pane's shell %d", shell)
	}
	pid := children[0]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(guard)
	for proctest.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("sluice (%d) outlived its SIGKILL", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	shown := e.restore(id)
	if len(shown) != 2 || !strings.Contains(shown[1].text, "chunk-0020") || !shown[1].interrupted {
		t.Fatalf("a restore shows %+v; want the question and the streamed answer, interrupted", shown)
	}
}
