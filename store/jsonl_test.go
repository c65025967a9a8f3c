package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/storetest"
)

func TestJSONLContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		// A small MaxOpen makes the contract run through released and
		// reopened files.
		st := store.NewJSONL(t.TempDir())
		st.MaxOpen = 3
		return st
	})
}

// TestJSONLBoundsOpenFiles: a server's many idle sessions hold at most
// MaxOpen descriptors, and each still appends.
func TestJSONLBoundsOpenFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.NewJSONL(t.TempDir())
	st.MaxOpen = 4
	dir := t.TempDir()
	var logs []store.Log
	for i := range 50 {
		l, err := st.Create(ctx, store.Key{WorkDir: dir, ID: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := l.Append(ctx, json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	if n := openUnder(t, st.Root()); n > st.MaxOpen {
		t.Errorf("%d session files open, want at most %d", n, st.MaxOpen)
	}
	for _, l := range logs {
		if err := l.Append(ctx, json.RawMessage(`{"n":2}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := openUnder(t, st.Root()); n > st.MaxOpen {
		t.Errorf("after appending to each again: %d session files open, want at most %d", n, st.MaxOpen)
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

// TestJSONLTornLine: a record cut by a crash is skipped with a warning and
// the next append starts on a line of its own.
func TestJSONLTornLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.NewJSONL(t.TempDir())
	key := store.Key{WorkDir: t.TempDir(), ID: "torn"}
	l, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	p, _ := st.Path(key)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"b":`)
	f.Close()
	l, err = st.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, json.RawMessage("{\n\"c\": 3}")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	recs, warnings, err := st.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || string(recs[0]) != `{"a":1}` || string(recs[1]) != `{"c":3}` || len(warnings) != 1 {
		t.Errorf("records %s, warnings %q; want a and c and one warning", recs, warnings)
	}
}

// TestJSONLFullDisk: a write the disk cannot take fails with the cause and
// leaves no part of the record behind. /dev/full stands in for a full disk
// (every write fails with ENOSPC).
func TestJSONLFullDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test needs /dev/full (Linux): %v", err)
	}
	ctx := context.Background()
	st := store.NewJSONL(t.TempDir())
	key := store.Key{WorkDir: t.TempDir(), ID: "full"}
	l, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	p, _ := st.Path(key)
	os.Remove(p)
	if err := os.Symlink("/dev/full", p); err != nil {
		t.Fatal(err)
	}
	l, err = st.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.Append(ctx, json.RawMessage(`{"a":1}`))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Append on a full disk: %v, want ENOSPC", err)
	}
}

// BenchmarkJSONLAppend is one journal batch: a few streamed-delta records
// appended and synced. A streaming session pays it at most once per 50 ms.
func BenchmarkJSONLAppend(b *testing.B) {
	ctx := context.Background()
	st := store.NewJSONL(b.TempDir())
	l, err := st.Create(ctx, store.Key{WorkDir: b.TempDir(), ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := json.RawMessage(`{"type":"event","time":0,"method":"assistantContentUpdated","event":{"sessionId":"","seq":0,"messageId":"m","blockIndex":0,"chunk":"a few streamed tokens","stage":"streaming"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(ctx, rec, rec, rec); err != nil {
			b.Fatal(err)
		}
	}
}
