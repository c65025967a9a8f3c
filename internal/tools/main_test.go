package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/tool"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("SLUICE_TEST_BASH_PARENT"); dir != "" {
		// The parent process of TestBashDiesWithSluice.
		bashParent(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// recorder is a tool.Output that keeps what it is given and lets a test
// wait until some text has arrived.
type recorder struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	chunks  [][]byte
	waiters map[string]chan struct{}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	r.chunks = append(r.chunks, bytes.Clone(p))
	for s, ch := range r.waiters {
		if strings.Contains(r.buf.String(), s) {
			close(ch)
			delete(r.waiters, s)
		}
	}
	return len(p), nil
}

// seen returns a channel closed once s has been written.
func (r *recorder) seen(s string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(r.buf.String(), s) {
		close(ch)
		return ch
	}
	if r.waiters == nil {
		r.waiters = make(map[string]chan struct{})
	}
	r.waiters[s] = ch
	return ch
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// params marshals a tool's input.
func params(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// workDir returns a fresh working directory (symlinks resolved, so that
// paths in results compare equal) and its Env.
func workDir(t *testing.T) (string, *tool.Env) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir, &tool.Env{WorkDir: dir}
}

// writeFiles creates files (path relative to dir → content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// run calls t with params v in env.
func run(t *testing.T, tl tool.Tool, env *tool.Env, v any) (tool.Result, error) {
	t.Helper()
	return tl.Run(context.Background(), env, params(t, v), &recorder{})
}
