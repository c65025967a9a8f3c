// Package storetest checks that an implementation of store.Store keeps the
// contract package agent relies on. Every implementation's tests call Run.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/store"
)

// Run checks the implementation that open returns; each call must return
// an empty store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	ctx := context.Background()
	rec := func(s string) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"r":%q}`, s)) }

	t.Run("AppendThenLoad", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		key := store.Key{WorkDir: t.TempDir(), ID: "s1"}
		l, err := st.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, rec("a"), rec("b")); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, rec("c")); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, st, key, `{"r":"a"}`, `{"r":"b"}`, `{"r":"c"}`)
		l, err = st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, rec("d")); err != nil {
			t.Fatal(err)
		}
		l.Close()
		checkRecords(t, st, key, `{"r":"a"}`, `{"r":"b"}`, `{"r":"c"}`, `{"r":"d"}`)
		if err := l.Append(ctx, rec("e")); err == nil {
			t.Error("Append after Close succeeded")
		}
	})

	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		key := store.Key{WorkDir: t.TempDir(), ID: "nope"}
		if _, err := st.Open(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Open of a missing session: %v, want ErrNotFound", err)
		}
		if _, _, err := st.Load(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Load of a missing session: %v, want ErrNotFound", err)
		}
		infos, err := st.List(ctx, key.WorkDir)
		if err != nil || len(infos) != 0 {
			t.Errorf("List of an empty directory: %v, %v", infos, err)
		}
	})

	t.Run("CreateTwice", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		key := store.Key{WorkDir: t.TempDir(), ID: "s1"}
		l, err := st.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := st.Create(ctx, key); !errors.Is(err, store.ErrExists) {
			t.Errorf("second Create: %v, want ErrExists", err)
		}
	})

	t.Run("ListPerWorkDir", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		dirA, dirB := t.TempDir(), t.TempDir()
		for _, k := range []store.Key{{WorkDir: dirA, ID: "a1"}, {WorkDir: dirA, ID: "a2"}, {WorkDir: dirB, ID: "b1"}} {
			l, err := st.Create(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			var recs []json.RawMessage
			for i := range 10 {
				recs = append(recs, rec(fmt.Sprint(k.ID, i)))
			}
			if err := l.Append(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			l.Close()
		}
		infos, err := st.List(ctx, dirA)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, in := range infos {
			ids[in.ID] = true
			if len(in.Head) < 8 || string(in.Head[0]) != fmt.Sprintf(`{"r":"%s0"}`, in.ID) {
				t.Errorf("session %s: head %q, want its first 8 records at least", in.ID, in.Head)
			}
		}
		if len(infos) != 2 || !ids["a1"] || !ids["a2"] {
			t.Errorf("List(dirA) = %v, want a1 and a2", ids)
		}
	})

	t.Run("ConcurrentLogs", func(t *testing.T) {
		t.Parallel()
		st := open(t)
		dir := t.TempDir()
		const logs, appends = 40, 20
		var wg sync.WaitGroup
		errs := make(chan error, logs)
		for i := range logs {
			wg.Go(func() {
				key := store.Key{WorkDir: dir, ID: fmt.Sprint("c", i)}
				l, err := st.Create(ctx, key)
				if err != nil {
					errs <- err
					return
				}
				defer l.Close()
				for j := range appends {
					if err := l.Append(ctx, rec(fmt.Sprint(j))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := range logs {
			recs, _, err := st.Load(ctx, store.Key{WorkDir: dir, ID: fmt.Sprint("c", i)})
			if err != nil || len(recs) != appends {
				t.Fatalf("session c%d: %d records, %v; want %d", i, len(recs), err, appends)
			}
			for j, r := range recs {
				if string(r) != string(rec(fmt.Sprint(j))) {
					t.Fatalf("session c%d record %d = %s", i, j, r)
				}
			}
		}
	})
}

func checkRecords(t *testing.T, st store.Store, key store.Key, want ...string) {
	t.Helper()
	recs, warnings, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if len(recs) != len(want) {
		t.Fatalf("loaded %d records, want %d: %s", len(recs), len(want), recs)
	}
	for i := range want {
		var a, b any
		if json.Unmarshal(recs[i], &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("record %d = %s, want %s", i, recs[i], want[i])
		}
	}
}
