package sqlitefile

// The fixtures in testdata were written by the real SQLite (modernc.org/sqlite)
// with the relay's old schema, and beside them the rows SQLite read back
// from each. To regenerate them:
//
//	cd testdata/mkfixtures && go run .
//
// a.db: checkpointed; d.db: the same rows in 512-byte pages (a.json holds
// the rows of both); b.db: rows in the file and later ones only in its WAL,
// which was restarted, so stale frames follow; c.db: a WAL whose last
// transaction never committed; e.db: a WITHOUT ROWID table.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var relayTables = []string{"outbox", "seen", "inbox", "kv", "sqlite_sequence"}

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// expected reads the rows of snapshot in testdata/name (see mkfixtures'
// Row for the encoding).
func expected(t *testing.T, name, snapshot string) map[string][]Row {
	t.Helper()
	var snaps map[string]map[string][][]any
	if err := json.Unmarshal(read(t, name), &snaps); err != nil {
		t.Fatal(err)
	}
	snap, ok := snaps[snapshot]
	if !ok {
		t.Fatalf("%s has no snapshot %q", name, snapshot)
	}
	out := map[string][]Row{}
	for table, rows := range snap {
		for _, r := range rows {
			id, err := strconv.ParseInt(r[0].(string), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			row := Row{RowID: id, Values: []any{}}
			for _, v := range r[1:] {
				row.Values = append(row.Values, decodeValue(t, v))
			}
			out[table] = append(out[table], row)
		}
	}
	return out
}

func decodeValue(t *testing.T, v any) any {
	if v == nil {
		return nil
	}
	s := v.(string)
	switch s[0] {
	case 'i':
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	case 'r':
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	case 't':
		return s[1:]
	case 'b':
		b, err := hex.DecodeString(s[1:])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("bad value %q", s)
	return nil
}

// files writes db and, unless nil, wal into a directory of their own and
// returns the database's path.
func files(t testing.TB, db, wal []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	if wal != nil {
		if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// checkRows opens path and compares every relay table with want.
func checkRows(t *testing.T, path string, want map[string][]Row) {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, table := range relayTables {
		got, err := f.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		if len(want[table]) == 0 {
			t.Fatalf("the fixture has no rows in %s", table)
		}
		if len(got) != len(want[table]) {
			t.Errorf("%s: %d rows, want %d", table, len(got), len(want[table]))
		}
		for i := range min(len(got), len(want[table])) {
			if !reflect.DeepEqual(got[i], want[table][i]) {
				t.Errorf("%s row %d:\n got %s\nwant %s", table, i, show(got[i]), show(want[table][i]))
				break
			}
		}
	}
}

func show(r Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", r.RowID)
	for _, v := range r.Values {
		s := fmt.Sprintf(" %T(%v)", v, v)
		if len(s) > 60 {
			s = s[:60] + "…"
		}
		b.WriteString(s)
	}
	return b.String()
}

func TestFixtures(t *testing.T) {
	for _, tc := range []struct{ db, json, snapshot string }{
		{"a.db", "a.json", "final"},
		{"b.db", "b.json", "final"},
		{"c.db", "c.json", "final"}, // without the uncommitted transaction
		{"d.db", "a.json", "final"},
	} {
		t.Run(tc.db, func(t *testing.T) {
			var wal []byte
			if b, err := os.ReadFile(filepath.Join("testdata", tc.db+"-wal")); err == nil {
				wal = b
			}
			checkRows(t, files(t, read(t, tc.db), wal), expected(t, tc.json, tc.snapshot))
		})
	}
}

func TestOpenInPlace(t *testing.T) {
	f, err := Open(filepath.Join("testdata", "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Tables()
	want := []string{"outbox", "sqlite_sequence", "seen", "inbox", "kv"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tables() = %q, want %q", got, want)
	}
	kv, err := f.Rows("KV") // names match as in SQLite, ASCII case ignored
	if err != nil {
		t.Fatal(err)
	}
	var last []any
	for _, r := range kv {
		if r.Values[0] == "wal/key" {
			last = r.Values
		}
	}
	if !reflect.DeepEqual(last, []any{"wal/key", "last commit"}) {
		t.Errorf("wal/key = %v, want the value of the WAL's last commit", last)
	}
	if _, err := f.Rows("nope"); !errors.Is(err, ErrNoTable) {
		t.Errorf("Rows(nope) = %v, want ErrNoTable", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Rows("kv"); err == nil {
		t.Error("Rows after Close succeeded")
	}
}

// TestShape checks the fixtures exercise what they are for: interior pages
// in every table, overflow pages, and pages only in the WAL.
func TestShape(t *testing.T) {
	for _, name := range []string{"a.db", "d.db"} {
		f, err := Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range f.tables {
			p, err := f.page(uint32(tb.root))
			if err != nil {
				t.Fatal(err)
			}
			if tb.name != "sqlite_sequence" && p[0] != tableInterior {
				t.Errorf("%s: the root of %s is not an interior page (type %#x)", name, tb.name, p[0])
			}
		}
		longest := 0
		rows, _ := f.Rows("outbox")
		for _, r := range rows {
			longest = max(longest, len(r.Values[4].(string)))
		}
		if longest <= 2*f.pageSize {
			t.Errorf("%s: the longest text is %d bytes, not over two pages", name, longest)
		}
	}
	f, err := Open(filepath.Join("testdata", "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	if f.nPages <= uint32(len(f.db)/f.pageSize) {
		t.Errorf("b.db: the WAL adds no pages (%d, the file %d)", f.nPages, len(f.db)/f.pageSize)
	}
}

// frames returns the offsets of the frames of wal whose salts are the
// header's, whether each is a commit, and the offset after them.
func frames(t testing.TB, wal []byte) (offs []int, commits []bool, end int) {
	t.Helper()
	size := 24 + int(binary.BigEndian.Uint32(wal[8:]))
	end = 32
	for ; end+size <= len(wal) && bytes.Equal(wal[end+8:end+16], wal[16:24]); end += size {
		offs = append(offs, end)
		commits = append(commits, binary.BigEndian.Uint32(wal[end+4:]) != 0)
	}
	return offs, commits, end
}

func TestWAL(t *testing.T) {
	db, wal := read(t, "b.db"), read(t, "b.db-wal")
	fileOnly := expected(t, "b.json", "file_only")
	offs, commits, end := frames(t, wal)
	if len(offs) < 3 || !commits[len(commits)-1] {
		t.Fatalf("b.db-wal: %d frames, the last a commit: %v", len(offs), commits[len(commits)-1:])
	}
	if end+4096+24 > len(wal) {
		t.Fatal("b.db-wal has no stale frames after its live ones")
	}
	// The frames of the last transaction: after the commit before it.
	last := len(offs) - 1
	for last > 0 && !commits[last-1] {
		last--
	}
	mutate := func(f func(w []byte)) []byte {
		w := bytes.Clone(wal)
		f(w)
		return w
	}
	for _, tc := range []struct {
		name string
		wal  []byte
		want string
	}{
		{"missing", nil, "file_only"},
		{"empty", []byte{}, "file_only"},
		{"short", wal[:31], "file_only"},
		{"header only", wal[:32], "file_only"},
		{"bad magic", mutate(func(w []byte) { w[0] ^= 1 }), "file_only"},
		{"bad header checksum", mutate(func(w []byte) { w[27] ^= 1 }), "file_only"},
		{"bad first frame checksum", mutate(func(w []byte) { w[offs[0]+100] ^= 1 }), "file_only"},
		{"bad first frame salt", mutate(func(w []byte) { w[offs[0]+8] ^= 1 }), "file_only"},
		{"bad checksum in the last transaction", mutate(func(w []byte) { w[offs[last]+24+5] ^= 0x40 }), "before_last"},
		{"bad salt on the last commit", mutate(func(w []byte) { w[offs[len(offs)-1]+12] ^= 1 }), "before_last"},
		{"last commit cut", wal[:offs[len(offs)-1]+100], "before_last"},
		{"big-endian checksums", bigEndian(t, wal), "final"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRows(t, files(t, db, tc.wal), expected(t, "b.json", tc.want))
		})
	}
	if reflect.DeepEqual(fileOnly, expected(t, "b.json", "before_last")) {
		t.Fatal("b.json's snapshots do not differ")
	}
}

// bigEndian rewrites a little-endian WAL's live frames with the magic and
// the checksums of a big-endian writer.
func bigEndian(t *testing.T, wal []byte) []byte {
	if binary.BigEndian.Uint32(wal) != 0x377f0682 {
		t.Fatalf("b.db-wal's magic is %#x", binary.BigEndian.Uint32(wal))
	}
	w := bytes.Clone(wal)
	binary.BigEndian.PutUint32(w, 0x377f0683)
	resum(t, w, binary.BigEndian)
	return w
}

// resum recomputes the checksums of a WAL's header and live frames in
// place, reading words in order.
func resum(t testing.TB, w []byte, order binary.ByteOrder) {
	sum := func(s [2]uint32, b []byte) [2]uint32 {
		for i := 0; i < len(b); i += 8 {
			s[0] += order.Uint32(b[i:]) + s[1]
			s[1] += order.Uint32(b[i+4:]) + s[0]
		}
		return s
	}
	s := sum([2]uint32{}, w[:24])
	binary.BigEndian.PutUint32(w[24:], s[0])
	binary.BigEndian.PutUint32(w[28:], s[1])
	offs, _, _ := frames(t, w)
	size := 24 + int(binary.BigEndian.Uint32(w[8:]))
	for _, off := range offs {
		s = sum(sum(s, w[off:off+8]), w[off+24:off+size])
		binary.BigEndian.PutUint32(w[off+16:], s[0])
		binary.BigEndian.PutUint32(w[off+20:], s[1])
	}
}

func TestUncommitted(t *testing.T) {
	db, wal := read(t, "c.db"), read(t, "c.db-wal")
	offs, commits, _ := frames(t, wal)
	if commits[len(commits)-1] {
		t.Fatal("c.db-wal ends with a commit")
	}
	// Marking the open transaction's last frame a commit, with checksums
	// to match, makes its rows appear: the fixture does hold them.
	w := bytes.Clone(wal)
	size := uint32(len(db) / 4096)
	for _, off := range offs {
		size = max(size, binary.BigEndian.Uint32(w[off:]))
	}
	binary.BigEndian.PutUint32(w[offs[len(offs)-1]+4:], size)
	resum(t, w, binary.LittleEndian)
	f, err := Open(files(t, db, w))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.Rows("outbox")
	if err != nil {
		t.Fatal(err)
	}
	committed := len(expected(t, "c.json", "final")["outbox"])
	if len(rows) <= committed || !strings.HasPrefix(rows[len(rows)-1].Values[4].(string), "never committed") {
		t.Fatalf("with the open transaction committed: %d rows (committed %d), the last %s", len(rows), committed, show(rows[len(rows)-1]))
	}
}

// patch returns a copy of b with b[off:] overwritten by v.
func patch(b []byte, off int, v ...byte) []byte {
	b = bytes.Clone(b)
	copy(b[off:], v)
	return b
}

func TestMalformed(t *testing.T) {
	a, d := read(t, "a.db"), read(t, "d.db")
	f, err := Open(filepath.Join("testdata", "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	var outbox, kv uint32
	for _, tb := range f.tables {
		switch tb.name {
		case "outbox":
			outbox = uint32(tb.root)
		case "kv":
			kv = uint32(tb.root)
		}
	}
	root := int(outbox-1) * f.pageSize // the outbox's interior root page
	be32 := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	firstCell := int(binary.BigEndian.Uint16(a[root+12:]))
	leaf := int(binary.BigEndian.Uint32(a[root+firstCell:])-1) * f.pageSize
	for _, tc := range []struct {
		name, table string
		db          []byte
		want        string // in the error of Open, or else of Rows
	}{
		{"empty", "", nil, "not a SQLite 3 database"},
		{"header cut", "", a[:99], "not a SQLite 3 database"},
		{"bad magic", "", patch(a, 0, 'X'), "not a SQLite 3 database"},
		{"truncated by a page", "", a[:len(a)-f.pageSize], "truncated"},
		{"truncated mid-page", "", a[:len(a)-1000], "truncated"},
		{"UTF-16le", "", patch(a, 56, 0, 0, 0, 2), "UTF-16"},
		{"UTF-16be", "", patch(a, 56, 0, 0, 0, 3), "UTF-16"},
		{"odd page size", "", patch(a, 16, 0x10, 0x01), "page size"},
		{"too many reserved bytes", "", patch(d, 20, 255), "reserved"},
		{"loop", "outbox", patch(a, root+8, be32(outbox)...), "reached twice"},
		{"child out of range", "outbox", patch(a, root+8, be32(1<<30)...), "out of range"},
		{"child zero", "outbox", patch(a, root+firstCell, 0, 0, 0, 0), "out of range"},
		{"not a b-tree page", "kv", patch(a, int(kv-1)*f.pageSize, 0x07), "not a b-tree page"},
		{"too many cells", "outbox", patch(a, leaf+3, 0x7f, 0xff), "overrun"},
		{"cell pointer past the page", "outbox", patch(a, leaf+8, 0xff, 0xf0), "outside"},
		{"rowids out of order", "outbox", patch(a, leaf+8, a[leaf+10], a[leaf+11], a[leaf+8], a[leaf+9]), "follows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(files(t, tc.db, nil))
			if err == nil {
				defer f.Close()
				if tc.table == "" {
					t.Fatalf("Open succeeded, want an error with %q", tc.want)
				}
				_, err = f.Rows(tc.table)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestWithoutRowid(t *testing.T) {
	f, err := Open(filepath.Join("testdata", "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Rows("pairs"); err == nil || !strings.Contains(err.Error(), "WITHOUT ROWID") {
		t.Fatalf("Rows(pairs) = %v, want a WITHOUT ROWID error", err)
	}
}

func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		payload []byte
		want    []any
		err     string
	}{
		{[]byte{1}, nil, ""},
		{[]byte{4, 0, 8, 9}, []any{nil, int64(0), int64(1)}, ""},
		{[]byte{3, 1, 2, 0xff, 0x80, 0x00}, []any{int64(-1), int64(-32768)}, ""},
		{[]byte{2, 5, 0x80, 0, 0, 0, 0, 0}, []any{int64(-1 << 47)}, ""},
		{[]byte{2, 7, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, []any{1.5}, ""},
		{[]byte{3, 13 + 2*2, 12 + 2*1, 'h', 'i', 0}, []any{"hi", []byte{0}}, ""},
		{[]byte{2, 10}, nil, "reserved"},
		{[]byte{2, 6, 1, 2}, nil, "overruns"},
		{[]byte{9, 1}, nil, "does not fit"},
		{[]byte{3, 0x81, 0x81}, nil, "ends inside"},
		{[]byte{0}, nil, "does not fit"},
	} {
		got, err := record(tc.payload)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("record(%x) error %v, want %q", tc.payload, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("record(%x) = %#v, %v, want %#v", tc.payload, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		b    []byte
		v    uint64
		n    int
		name string
	}{
		{[]byte{0x7f}, 0x7f, 1, "one byte"},
		{[]byte{0x81, 0x00}, 0x80, 2, "two bytes"},
		{bytes.Repeat([]byte{0xff}, 9), 1<<64 - 1, 9, "nine bytes"},
		{[]byte{0x81}, 0, 0, "cut"},
	} {
		if v, n := varint(tc.b); v != tc.v || n != tc.n {
			t.Errorf("varint %s = %d, %d; want %d, %d", tc.name, v, n, tc.v, tc.n)
		}
	}
}

func TestLocalPayload(t *testing.T) {
	// U=4096: X=4061, M=489, K=M+(P-M)%4092. A payload of X bytes stays
	// local; one more spills, keeping K bytes if K<=X, else M.
	for _, tc := range []struct{ size, want uint64 }{
		{4061, 4061}, {4062, 489}, {4092 + 489, 489}, {4092 + 489 + 3572, 4061}, {4092 + 489 + 3573, 489}, {100000, 1792},
	} {
		if got := localPayload(tc.size, 4096); got != tc.want {
			t.Errorf("localPayload(%d, 4096) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func FuzzOpen(f *testing.F) {
	for _, name := range []string{"a.db", "b.db", "c.db", "d.db", "e.db"} {
		wal, _ := os.ReadFile(filepath.Join("testdata", name+"-wal"))
		f.Add(read(f, name), wal)
	}
	// Small inputs, which the fuzzer mutates faster and deeper.
	db := synth(512, cell(1, "in the file"), cell(2, int64(-3), "x"))
	f.Add(db, []byte(nil))
	f.Add(db, walOf(f, 512, struct {
		page, commit uint32
		data         []byte
	}{2, 2, synth(512, cell(3, "in the WAL"))[512:]}))
	f.Fuzz(func(t *testing.T, db, wal []byte) {
		// parse, not Open: the same reading without temp files, which
		// cost the fuzzer nine tenths of its speed.
		file, err := parse(db, wal)
		if err != nil {
			return
		}
		defer file.Close()
		for _, name := range append(file.Tables(), "sqlite_schema") {
			file.Rows(name)
		}
	})
}

// synth builds a database of two pageSize-byte pages: page 1 holds the
// schema of one table t whose b-tree is the table leaf page 2, holding
// cells (each a cell's bytes).
func synth(pageSize int, cells ...[]byte) []byte {
	return synthReserved(pageSize, 0, nil, cells...)
}

// synthReserved is synth with reserved bytes at the end of each page,
// filled with 0xEE, and more pages after page 2.
func synthReserved(pageSize, reserved int, more [][]byte, cells ...[]byte) []byte {
	n := 2 + len(more)
	db := bytes.Repeat([]byte{0xEE}, n*pageSize)
	usable := pageSize - reserved
	for i := range n {
		clear(db[i*pageSize : i*pageSize+usable])
	}
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:], uint16(pageSize)) // 65536 is stored as 1
	if pageSize == 65536 {
		binary.BigEndian.PutUint16(db[16:], 1)
	}
	db[18], db[19], db[20], db[21], db[22], db[23] = 1, 1, byte(reserved), 64, 32, 32
	binary.BigEndian.PutUint32(db[24:], 1)         // change counter
	binary.BigEndian.PutUint32(db[28:], uint32(n)) // pages
	binary.BigEndian.PutUint32(db[56:], 1)         // UTF-8
	binary.BigEndian.PutUint32(db[92:], 1)         // version-valid-for
	leaf := func(page, hdr int, cells [][]byte) {
		p := db[page*pageSize : page*pageSize+usable]
		p[hdr] = tableLeaf
		binary.BigEndian.PutUint16(p[hdr+3:], uint16(len(cells)))
		end := usable
		for i, c := range cells {
			end -= len(c)
			copy(p[end:], c)
			binary.BigEndian.PutUint16(p[hdr+8+2*i:], uint16(end))
		}
	}
	schema := rec("table", "t", "t", int64(2), "CREATE TABLE t(x)")
	leaf(0, 100, [][]byte{append([]byte{byte(len(schema)), 1}, schema...)})
	leaf(1, 0, cells)
	for i, p := range more {
		copy(db[(2+i)*pageSize:(2+i)*pageSize+usable], p)
	}
	return db
}

// TestReservedOverflow: with reserved bytes, the spill and the overflow
// pages' contents follow the usable size, not the page size.
func TestReservedOverflow(t *testing.T) {
	// 512-byte pages, 32 reserved: U=480, X=445, M=35. A 993-byte payload
	// keeps K=35+(993-35)%476=41 bytes in the cell; two overflow pages
	// hold the other 476 bytes each.
	text := make([]byte, 990)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	const serial = 13 + 2*990
	payload := append([]byte{3, 0x80 | serial>>7, serial & 0x7f}, text...)
	c := append([]byte{0x80 | 993>>7, 993 & 0x7f, 1}, payload[:41]...)
	c = binary.BigEndian.AppendUint32(c, 3)
	over1 := append(binary.BigEndian.AppendUint32(nil, 4), payload[41:517]...)
	over2 := append(binary.BigEndian.AppendUint32(nil, 0), payload[517:]...)
	f, err := Open(files(t, synthReserved(512, 32, [][]byte{over1, over2}, c), nil))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows("t")
	if err != nil || len(rows) != 1 || !reflect.DeepEqual(rows[0].Values, []any{string(text)}) {
		t.Fatalf("Rows(t) = %v, %v, want one row of the text", rows, err)
	}
}

// rec encodes a short record of strings and small integers.
func rec(values ...any) []byte {
	header, body := []byte{0}, []byte{}
	for _, v := range values {
		switch v := v.(type) {
		case string:
			header = append(header, byte(13+2*len(v)))
			body = append(body, v...)
		case int64:
			header = append(header, 1)
			body = append(body, byte(v))
		}
	}
	header[0] = byte(len(header))
	return append(header, body...)
}

func TestPageSize65536(t *testing.T) {
	r := rec("hello")
	f, err := Open(files(t, synth(65536, append([]byte{byte(len(r)), 7}, r...)), nil))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows("t")
	if want := []Row{{7, []any{"hello"}}}; err != nil || !reflect.DeepEqual(rows, want) {
		t.Fatalf("Rows(t) = %v, %v, want %v", rows, err, want)
	}
}

// TestOverlappingCells: cell pointers into one region of a page, each
// reading a payload of most of the page, are refused rather than costing a
// page's size each.
func TestOverlappingCells(t *testing.T) {
	const n, spacing = 40, 5
	// Each cell: a 3800-byte size (a 2-byte varint), its rowid, then a
	// record of one NULL; the next cell starts inside its payload.
	region := []byte{}
	for i := range n {
		region = append(region, 0x80|3800>>7, 3800&0x7f, byte(i+1), 2, 0)
	}
	db := synth(4096, append(region, make([]byte, 4096-8-2*n-len(region))...))
	p := db[4096:]
	binary.BigEndian.PutUint16(p[3:], n)
	for i := range n {
		binary.BigEndian.PutUint16(p[8+2*i:], uint16(8+2*n+spacing*i))
	}
	f, err := Open(files(t, db, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Rows("t"); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("Rows(t) = %v, want an error about overlapping cells", err)
	}
}

// walOf builds a little-endian WAL of pageSize-byte frames, each a page
// number, the database's size if it commits (else 0), and the page.
func walOf(t testing.TB, pageSize int, frames ...struct {
	page, commit uint32
	data         []byte
}) []byte {
	w := make([]byte, 32)
	binary.BigEndian.PutUint32(w, 0x377f0682)
	binary.BigEndian.PutUint32(w[4:], 3007000)
	binary.BigEndian.PutUint32(w[8:], uint32(pageSize))
	copy(w[16:], "saltsalt")
	for _, f := range frames {
		w = binary.BigEndian.AppendUint32(w, f.page)
		w = binary.BigEndian.AppendUint32(w, f.commit)
		w = append(w, "saltsalt"...)
		w = append(w, make([]byte, 8)...)
		w = append(w, f.data...)
	}
	resum(t, w, binary.LittleEndian)
	return w
}

// cell is a table leaf cell of a short record.
func cell(rowid byte, values ...any) []byte {
	r := rec(values...)
	return append([]byte{byte(len(r)), rowid}, r...)
}

// TestWALVersions: of the committed frames, the latest version of a page
// wins; frames after the last commit do not count.
func TestWALVersions(t *testing.T) {
	db := synth(512, cell(1, "in the file"))
	page2 := func(s string) []byte { return synth(512, cell(1, s))[512:] }
	type frame = struct {
		page, commit uint32
		data         []byte
	}
	wal := walOf(t, 512,
		frame{2, 2, page2("first commit")},
		frame{2, 0, page2("overwritten")},
		frame{2, 2, page2("second commit")},
		frame{2, 0, page2("never committed")})
	f, err := Open(files(t, db, wal))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows("t")
	if want := []Row{{1, []any{"second commit"}}}; err != nil || !reflect.DeepEqual(rows, want) {
		t.Fatalf("Rows(t) = %v, %v, want %v", rows, err, want)
	}
}
