package rpc_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/wire"
)

// TestIdleSessionsReleaseFiles: a server that has created many sessions
// keeps a bounded number of their files open (with ulimit -n 256 it used
// to stop creating sessions after ~190), and an idle session's file is
// reopened when it is used again.
func TestIdleSessionsReleaseFiles(t *testing.T) {
	t.Parallel()
	script := &modeltest.Script{Respond: func(*model.Request) []modeltest.Step { return modeltest.Answer("m", "ok") }}
	st := store.NewJSONL(t.TempDir())
	ts := newTestServer(t, script, st, nil)
	const sessions = 300
	var first string
	for i := range sessions {
		w := ts.dial(0)
		res := w.initialize(wire.InitializeParams{})
		if i == 0 {
			first = res.SessionID
		}
		w.runToIdle("hello")
		w.conn.Close()
	}
	if n := openUnder(t, st.Root()); n > 32 {
		t.Fatalf("%d session files open after %d sessions, want at most 32", n, sessions)
	}
	w := ts.dial(0)
	w.initialize(wire.InitializeParams{SessionID: first})
	w.runToIdle("again")
	path, _ := st.Path(store.Key{WorkDir: ts.dir, ID: first})
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"again"`) {
		t.Fatalf("the first session's file after it was used again: %v\n%s", err, data)
	}
}

// openUnder counts this process's descriptors open on files under root.
func openUnder(t *testing.T, root string) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("this test counts descriptors in /proc/self/fd, which is Linux's")
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("this test counts descriptors in /proc: %v", err)
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(p, root) {
			n++
		}
	}
	return n
}
