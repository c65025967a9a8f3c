package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fixtures is where package sqlitefile keeps state files of the old
// (SQLite) relay, each with the rows SQLite reads from it in a JSON file.
const fixtures = "sqlitefile/testdata"

// oldRows are the rows of each table of an old state file, as SQLite read
// them: the rowid, then each column's value.
type oldRows map[string][][]any

// fixture copies the old state file name (and its WAL, if it has one) into
// dir as relay.db, and returns its path and the rows SQLite reads from it
// (the snapshot "final" of the JSON file jsonName).
func fixture(t *testing.T, dir, name, jsonName string) (string, oldRows) {
	t.Helper()
	path := filepath.Join(dir, "relay.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(filepath.Join(fixtures, name+suffix))
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(fixtures, jsonName))
	if err != nil {
		t.Fatal(err)
	}
	// A value is null, or a type letter and the value: "i" an integer, "r"
	// a real, "t" text, "b" a blob in hex.
	var snaps map[string]map[string][][]*string
	if err := json.Unmarshal(data, &snaps); err != nil {
		t.Fatal(err)
	}
	want := oldRows{}
	for table, rows := range snaps["final"] {
		for _, r := range rows {
			vals := make([]any, len(r))
			for i, v := range r {
				if v == nil {
					continue
				}
				s := *v
				if i == 0 {
					vals[0], _ = strconv.ParseInt(s, 10, 64)
					continue
				}
				switch s[0] {
				case 'i':
					vals[i], _ = strconv.ParseInt(s[1:], 10, 64)
				case 'r':
					vals[i], _ = strconv.ParseFloat(s[1:], 64)
				case 't':
					vals[i] = s[1:]
				case 'b':
					vals[i], _ = hex.DecodeString(s[1:])
				}
			}
			want[table] = append(want[table], vals)
		}
	}
	return path, want
}

// text and integer read an old value as the old store did: a blob as its
// bytes, a real as its integer part.
func text(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v.(string)
}

func integer(v any) int64 {
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return v.(int64)
}

// checkMigrated checks that s holds every row of want: the outbox and
// inbox of each channel in id order with their ids, the seen keys with
// their times, and every value (an empty one is no value).
func checkMigrated(t *testing.T, s *Store, want oldRows) {
	t.Helper()
	ctx := context.Background()
	var items []Item
	channels := map[string]bool{}
	for _, r := range want["outbox"] {
		items = append(items, Item{ID: r[0].(int64), Channel: text(r[2]), Chat: text(r[3]), Kind: text(r[4]), Text: text(r[5]), Created: time.UnixMilli(integer(r[6]))})
		channels[text(r[2])] = true
	}
	for ch := range channels {
		got, err := s.Pending(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		var exp []Item
		for _, it := range items {
			if it.Channel == ch {
				exp = append(exp, it)
			}
		}
		if len(got) != len(exp) {
			t.Fatalf("outbox of %s: %d items, want %d", ch, len(got), len(exp))
		}
		for i := range exp {
			if got[i] != exp[i] && !(got[i].Created.Equal(exp[i].Created) && sameExceptTime(got[i], exp[i])) {
				t.Errorf("outbox of %s, item %d: %+v, want %+v", ch, i, got[i], exp[i])
			}
		}
	}
	var exp []Question
	for _, r := range want["inbox"] {
		exp = append(exp, Question{ID: r[0].(int64), Channel: text(r[2]), Chat: text(r[3]), Text: text(r[4]), Started: integer(r[5]) != 0, Created: time.UnixMilli(integer(r[6]))})
	}
	got := map[string][]Question{}
	for _, q := range exp {
		if _, ok := got[q.Channel]; !ok {
			qs, err := s.Questions(ctx, q.Channel)
			if err != nil {
				t.Fatal(err)
			}
			got[q.Channel] = qs
		}
	}
	for _, q := range exp {
		qs := got[q.Channel]
		if len(qs) == 0 || qs[0].ID != q.ID || qs[0].Chat != q.Chat || qs[0].Text != q.Text || qs[0].Started != q.Started || !qs[0].Created.Equal(q.Created) {
			t.Fatalf("inbox of %s: next %+v, want %+v", q.Channel, qs[:min(1, len(qs))], q)
		}
		got[q.Channel] = qs[1:]
	}
	for ch, qs := range got {
		if len(qs) != 0 {
			t.Errorf("inbox of %s: %d questions more than the old file's", ch, len(qs))
		}
	}

	seen := map[string]int64{}
	for _, r := range want["seen"] {
		seen[string(seenKey(text(r[1]), text(r[2])))] = integer(r[3])
	}
	n := 0
	err := s.b.(*boltBackend).db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(seenBucket).ForEach(func(k, v []byte) error {
			f := fields{b: v}
			if at, ok := seen[string(k)]; !ok || f.int() != at {
				t.Errorf("seen key %q: %v, want %d", k, f.int(), at)
			}
			n++
			return nil
		})
	})
	if err != nil || n != len(seen) {
		t.Errorf("%d seen keys (%v), want %d", n, err, len(seen))
	}

	for _, r := range want["kv"] {
		k, v := text(r[1]), text(r[2])
		got, err := s.Get(ctx, k)
		if v == "" {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q) = %q, %v; want no value", k, got, err)
			}
		} else if got != v || err != nil {
			t.Errorf("Get(%q) = %.40q, %v; want %.40q", k, got, err, v)
		}
	}
}

func sameExceptTime(a, b Item) bool {
	a.Created, b.Created = time.Time{}, time.Time{}
	return a == b
}

// nextIDs are the ids the old file's sequences give next.
func nextIDs(want oldRows) (outbox, inbox int64) {
	for _, r := range want["sqlite_sequence"] {
		switch text(r[1]) {
		case "outbox":
			outbox = integer(r[2])
		case "inbox":
			inbox = integer(r[2])
		}
	}
	if rows := want["outbox"]; len(rows) > 0 {
		outbox = max(outbox, rows[len(rows)-1][0].(int64))
	}
	if rows := want["inbox"]; len(rows) > 0 {
		inbox = max(inbox, rows[len(rows)-1][0].(int64))
	}
	return outbox + 1, inbox + 1
}

// TestMigrate: Open turns an old SQLite state file into a bbolt file with
// every row — those only in its WAL too, and none of a transaction that
// never committed — with the same ids; new ids go on from the old
// sequences; the old file is kept beside it; a second Open migrates
// nothing again.
func TestMigrate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, json string
		walOnly    func(t *testing.T, s *Store)
	}{
		{"a.db", "a.json", nil}, // checkpointed: no WAL
		{"b.db", "b.json", func(t *testing.T, s *Store) {
			ctx := context.Background()
			items, _ := s.Pending(ctx, "telegram/1")
			if len(items) == 0 || items[len(items)-1].Text != "the last row" {
				t.Errorf("the WAL's last commit's outbox row is missing")
			}
			if v, err := s.Get(ctx, "wal/key"); v != "last commit" || err != nil {
				t.Errorf("a value only in the WAL: %q, %v", v, err)
			}
			qs, _ := s.Questions(ctx, "telegram/0")
			if len(qs) == 0 || qs[len(qs)-1].Chat != "chat-wal" {
				t.Errorf("the question only in the WAL is missing")
			}
		}},
		{"c.db", "c.json", func(t *testing.T, s *Store) {
			if v, err := s.Get(context.Background(), "committed"); v != "in the WAL" || err != nil {
				t.Errorf("a value committed in the WAL (then overwritten by a transaction that never committed): %q, %v", v, err)
			}
		}},
		{"d.db", "a.json", nil}, // 512-byte pages: deep b-trees, long overflow chains
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path, want := fixture(t, t.TempDir(), tt.file, tt.json)
			_, hadWAL := os.Stat(path + "-wal")
			oldFile, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := open(t, path)
			checkMigrated(t, s, want)
			if tt.walOnly != nil {
				tt.walOnly(t, s)
			}
			kept, err := os.ReadFile(path + ".sqlite")
			if err != nil || !bytes.Equal(kept, oldFile) {
				t.Errorf("the old file was not kept as relay.db.sqlite: %v", err)
			}
			if _, err := os.Stat(path + ".sqlite-wal"); (err == nil) != (hadWAL == nil) {
				t.Errorf("the old WAL beside the kept file: %v (before: %v)", err, hadWAL)
			}
			for _, leftover := range []string{path + "-wal", path + ".migrating"} {
				if _, err := os.Stat(leftover); err == nil {
					t.Errorf("%s is left", filepath.Base(leftover))
				}
			}
			outboxNext, inboxNext := nextIDs(want)
			it, err := s.Enqueue(ctx, Item{Channel: "new", Chat: "1", Kind: "final", Text: "after", Created: time.UnixMilli(1)})
			if err != nil || it.ID != outboxNext {
				t.Errorf("the next outbox id: %d, %v; want %d", it.ID, err, outboxNext)
			}
			q, _, err := s.Ask(ctx, "", Question{Channel: "new", Chat: "1", Text: "later", Created: time.UnixMilli(1)})
			if err != nil || q.ID != inboxNext {
				t.Errorf("the next inbox id: %d, %v; want %d", q.ID, err, inboxNext)
			}
			s.Close()

			// A second Open finds a bbolt file: the rows written since stay,
			// none is copied twice.
			s = open(t, path)
			defer s.Close()
			checkMigrated(t, s, want)
			if items, _ := s.Pending(ctx, "new"); len(items) != 1 {
				t.Errorf("after a second open, the new outbox: %+v", items)
			}
			if qs, _ := s.Questions(ctx, "new"); len(qs) != 1 {
				t.Errorf("after a second open, the new inbox: %+v", qs)
			}
		})
	}
}

// TestMigrateAfterCrash: whatever step a migration died at, the next Open
// ends with every row of the old file, and the old file kept.
func TestMigrateAfterCrash(t *testing.T) {
	t.Parallel()
	// A complete copy of fixture a, as a migration commits it.
	copyA := func(t *testing.T) []byte {
		t.Helper()
		path, _ := fixture(t, t.TempDir(), "a.db", "a.json")
		open(t, path).Close()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	write := func(t *testing.T, path string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	move := func(t *testing.T, from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// crash leaves the files as the migration of fixture b at path
		// did when it died.
		crash func(t *testing.T, path string)
	}{
		{"while bbolt created the copy", func(t *testing.T, path string) {
			write(t, path+".migrating", bytes.Repeat([]byte{0xa5}, 700))
		}},
		{"before the copy committed", func(t *testing.T, path string) {
			db, err := bolt.Open(path+".migrating", 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}},
		{"after the copy committed", func(t *testing.T, path string) {
			// Of another file: the copy is made again from the old file.
			write(t, path+".migrating", copyA(t))
		}},
		{"after the old file was renamed", func(t *testing.T, path string) {
			write(t, path+".migrating", migratedB(t))
			move(t, path, path+".sqlite")
		}},
		{"after the WAL was renamed", func(t *testing.T, path string) {
			write(t, path+".migrating", migratedB(t))
			move(t, path, path+".sqlite")
			move(t, path+"-wal", path+".sqlite-wal")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, want := fixture(t, t.TempDir(), "b.db", "b.json")
			tt.crash(t, path)
			s := open(t, path)
			defer s.Close()
			checkMigrated(t, s, want)
			if ok, err := isSQLite(path + ".sqlite"); !ok || err != nil {
				t.Errorf("the old file is not kept: %v", err)
			}
			for _, f := range []string{".sqlite-wal", ""} {
				if _, err := os.Stat(path + f); err != nil {
					t.Error(err)
				}
			}
			for _, f := range []string{"-wal", ".migrating"} {
				if _, err := os.Stat(path + f); err == nil {
					t.Errorf("relay.db%s is left", f)
				}
			}
		})
	}
}

// TestStaleCopy: a copy that never committed, its old file gone since, is
// removed, and Open starts an empty state.
func TestStaleCopy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "relay.db")
	db, err := bolt.Open(path+".migrating", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	if items, err := s.Pending(context.Background(), "telegram"); len(items) != 0 || err != nil {
		t.Errorf("pending: %+v, %v", items, err)
	}
	if _, err := os.Stat(path + ".migrating"); err == nil {
		t.Error("the stale copy is left")
	}
}

// migratedB is the bbolt file that fixture b migrates to: a finished copy
// of another state, for the crash points after the copy committed.
func migratedB(t *testing.T) []byte {
	t.Helper()
	path, _ := fixture(t, t.TempDir(), "b.db", "b.json")
	open(t, path).Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
