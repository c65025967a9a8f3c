// Command mkfixtures writes the SQLite files that sqlitefile's tests read,
// with the real SQLite (modernc.org/sqlite), and beside each a JSON file of
// the rows SQLite itself reads back from it. It is a module of its own so
// that the main module does not depend on SQLite for these tests.
//
//	cd testdata/mkfixtures && go run .
package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	_ "modernc.org/sqlite"
)

// schema is the relay's old state schema, exactly (internal/relay/store).
const schema = `
CREATE TABLE IF NOT EXISTS outbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	channel    TEXT NOT NULL,
	chat       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	text       TEXT NOT NULL,
	created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_channel ON outbox(channel, id);
CREATE TABLE IF NOT EXISTS seen (
	channel TEXT NOT NULL,
	key     TEXT NOT NULL,
	at_ms   INTEGER NOT NULL,
	PRIMARY KEY (channel, key)
);
CREATE TABLE IF NOT EXISTS inbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	channel    TEXT NOT NULL,
	chat       TEXT NOT NULL,
	text       TEXT NOT NULL,
	started    INTEGER NOT NULL DEFAULT 0,
	created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_channel ON inbox(channel, id);
CREATE TABLE IF NOT EXISTS kv (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`

var ctx = context.Background()

const dir = ".." // testdata

func main() {
	log.SetFlags(0)
	fixtureA()
	fixtureB()
	fixtureC()
	fixtureD()
	fixtureE()
}

// open opens a fresh database at testdata/name with the relay's pragmas
// (after any given first), on one connection. The pragmas are run in order
// here, not in the DSN, which runs them sorted: page_size must come before
// journal_mode writes page 1.
func open(name string, first ...string) (*sql.DB, *sql.Conn, string) {
	path := filepath.Join(dir, name)
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	check(err)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	check(err)
	for _, p := range append(first, "busy_timeout(5000)", "journal_mode(WAL)", "synchronous(NORMAL)") {
		exec(conn, "PRAGMA "+p)
	}
	exec(conn, schema)
	return db, conn, path
}

func exec(conn *sql.Conn, query string, args ...any) {
	if _, err := conn.ExecContext(ctx, query, args...); err != nil {
		log.Fatalf("%s: %v", query, err)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// ints are integers at the edges of every integer serial type.
var ints = []int64{0, 1, -1, 127, -128, 128, 32767, -32768, 32768, 1<<23 - 1, -1 << 23, 1 << 23,
	1<<31 - 1, -1 << 31, 1 << 31, 1<<47 - 1, -1 << 47, 1 << 47, math.MaxInt64, math.MinInt64, 1733140800123}

// fill writes the rows every fixture starts from: enough that each table
// has interior pages at 4096 bytes a page, unicode, a text longer than a
// page, empty strings, integers of every size, a real and a blob where
// SQLite's typing lets them in, and deleted rows.
func fill(conn *sql.Conn) {
	exec(conn, "BEGIN")
	for i := range 400 {
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", i%4))
		switch i {
		case 3:
			text = "héllo — 你好, мир 🌊🚀 ä\u0301"
		case 5:
			text = ""
		case 7:
			text = strings.Repeat("long line of text, 長い行 ", 400) // ~11 KB, overflows
		case 11:
			text = strings.Repeat("x", 4061) // around the spill threshold
		}
		var created any = ints[i%len(ints)]
		if i == 9 {
			created = 1.5 // INTEGER affinity keeps a real that is not whole
		}
		var kind any = "text"
		if i == 13 {
			kind = []byte{0, 0xff, 0x10, 'a'} // TEXT affinity leaves a blob a blob
		}
		exec(conn, "INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES (?, ?, ?, ?, ?)",
			fmt.Sprintf("telegram/%d", i%3), fmt.Sprintf("chat-%d", i%17), kind, text, created)
		exec(conn, "INSERT INTO seen(channel, key, at_ms) VALUES (?, ?, ?)",
			fmt.Sprintf("wechat/%d", i%2), fmt.Sprintf("msg-%06d-%s", i, strings.Repeat("k", i%7)), int64(i)*1000003-700000)
		if i%2 == 0 {
			exec(conn, "INSERT INTO inbox(channel, chat, text, started, created_ms) VALUES (?, ?, ?, ?, ?)",
				"telegram/0", fmt.Sprintf("chat-%d", i), fmt.Sprintf("question %d? %s", i, strings.Repeat("¿", i%31)), i%3 == 0, ints[(i*7)%len(ints)])
		}
	}
	for i := range 300 {
		exec(conn, "INSERT INTO kv(key, value) VALUES (?, ?)", fmt.Sprintf("cursor/%03d", i), strconv.Itoa(i*i))
	}
	exec(conn, "INSERT INTO kv(key, value) VALUES ('empty', ''), ('unicode/日本', 'ключ → 値 🌊')")
	exec(conn, "INSERT INTO kv(key, value) VALUES ('blob', X'00010203FEFF')")
	exec(conn, "INSERT INTO kv(key, value) VALUES ('session/long', ?)", strings.Repeat(`{"session":"0123456789abcdef"},`, 300))
	exec(conn, "DELETE FROM outbox WHERE id % 7 = 3 OR id BETWEEN 200 AND 230")
	exec(conn, "DELETE FROM seen WHERE rowid % 5 = 1")
	exec(conn, "DELETE FROM inbox WHERE id % 4 = 2")
	exec(conn, "DELETE FROM kv WHERE key LIKE 'cursor/0_5'")
	exec(conn, "COMMIT")
}

// Row is a row as the reader is to return it, in JSON: the rowid in
// decimal, then each value as SQLite typed it: null, or a string of a type
// letter and the value: "i" and a decimal integer, "r" and a real in Go's
// 'g' form, "t" and text, "b" and a blob in hex.
type Row []any

var tables = []string{"outbox", "seen", "inbox", "kv", "sqlite_sequence"}

// snapshot returns every table's rows as SQLite reads them, the INTEGER
// PRIMARY KEY column as the NULL the record stores.
func snapshot(conn *sql.Conn) map[string][]Row {
	out := map[string][]Row{}
	for _, t := range tables {
		cols, ipk := columns(conn, t)
		sel := []string{"rowid"}
		for _, c := range cols {
			sel = append(sel, "typeof("+c+")", c)
		}
		rows, err := conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+t+" ORDER BY rowid")
		check(err)
		for rows.Next() {
			var rowid int64
			dest := []any{&rowid}
			types := make([]string, len(cols))
			vals := make([]any, len(cols))
			for i := range cols {
				dest = append(dest, &types[i], &vals[i])
			}
			check(rows.Scan(dest...))
			r := Row{strconv.FormatInt(rowid, 10)}
			for i, v := range vals {
				r = append(r, value(types[i], v, i == ipk))
			}
			out[t] = append(out[t], r)
		}
		check(rows.Err())
		rows.Close()
	}
	return out
}

// columns returns a table's columns in declared order, and the index of
// its INTEGER PRIMARY KEY column (-1: none).
func columns(conn *sql.Conn, table string) ([]string, int) {
	rows, err := conn.QueryContext(ctx, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", table)
	check(err)
	defer rows.Close()
	var names []string
	ipk, pks := -1, 0
	for rows.Next() {
		var name, typ string
		var pk int
		check(rows.Scan(&name, &typ, &pk))
		if pk > 0 {
			pks++
			if strings.EqualFold(typ, "INTEGER") {
				ipk = len(names)
			}
		}
		names = append(names, name)
	}
	check(rows.Err())
	if pks != 1 {
		ipk = -1
	}
	return names, ipk
}

func value(typ string, v any, ipk bool) any {
	if ipk {
		return nil
	}
	switch typ {
	case "null":
		return nil
	case "integer":
		return "i" + strconv.FormatInt(v.(int64), 10)
	case "real":
		return "r" + strconv.FormatFloat(v.(float64), 'g', -1, 64)
	case "text":
		return "t" + v.(string)
	case "blob":
		return "b" + hex.EncodeToString(v.([]byte))
	}
	log.Fatalf("unknown type %q", typ)
	return nil
}

// writeJSON writes testdata/name: named snapshots of every table, a row a
// line.
func writeJSON(name string, snapshots map[string]map[string][]Row) {
	var b strings.Builder
	b.WriteString("{")
	for i, snap := range slices.Sorted(maps.Keys(snapshots)) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n%q: {", snap)
		for j, t := range tables {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n %q: [", t)
			for k, r := range snapshots[snap][t] {
				if k > 0 {
					b.WriteString(",")
				}
				line, err := json.Marshal(r)
				check(err)
				b.WriteString("\n  ")
				b.Write(line)
			}
			b.WriteString("]")
		}
		b.WriteString("}")
	}
	b.WriteString("\n}\n")
	check(os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644))
}

// copyOpen copies a database and its WAL while the connection is open,
// before closing would checkpoint the WAL into the file and delete it.
func copyOpen(path, name string) {
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		check(err)
		check(os.WriteFile(filepath.Join(dir, name+suffix), b, 0o644))
	}
}

func closeAll(db *sql.DB, conn *sql.Conn, path string) {
	check(conn.Close())
	check(db.Close())
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			log.Fatalf("%s%s is left after closing", path, suffix)
		}
	}
}

// filled is the rows fill writes, as fixture a holds them.
var filled map[string][]Row

// fixtureA: a checkpointed file (closing checkpoints the WAL and deletes it).
func fixtureA() {
	db, conn, path := open("a.db")
	fill(conn)
	filled = snapshot(conn)
	writeJSON("a.json", map[string]map[string][]Row{"final": filled})
	closeAll(db, conn, path)
}

// fixtureB: rows in the file, and later ones only in its WAL. The WAL was
// restarted after a checkpoint, so stale frames of an older generation
// (other salts) follow the live ones.
func fixtureB() {
	db, conn, path := open("b.tmp")
	fill(conn)
	exec(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
	exec(conn, "PRAGMA wal_autocheckpoint=0")
	exec(conn, "BEGIN")
	for i := range 150 {
		exec(conn, "INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES ('telegram/9', ?, 'text', ?, ?)",
			fmt.Sprintf("wal-chat-%d", i), fmt.Sprintf("in the file after a checkpoint %d %s", i, strings.Repeat("·", i)), int64(i)-75)
	}
	// Touch every leaf, so that this generation of the WAL outlasts the
	// next one's few frames.
	exec(conn, "UPDATE outbox SET chat = chat || '.'")
	exec(conn, "UPDATE seen SET at_ms = at_ms + 1")
	exec(conn, "UPDATE kv SET value = value || '.' WHERE typeof(value) = 'text'")
	exec(conn, "COMMIT")
	exec(conn, "PRAGMA wal_checkpoint(PASSIVE)") // backfills; the next write restarts the WAL
	dbOnly := snapshot(conn)
	exec(conn, "BEGIN")
	exec(conn, "UPDATE outbox SET text = 'edited in the WAL ✎' WHERE id IN (10, 300, 500)")
	exec(conn, "DELETE FROM seen WHERE rowid BETWEEN 50 AND 60")
	exec(conn, "COMMIT")
	exec(conn, "INSERT INTO inbox(channel, chat, text, created_ms) VALUES ('telegram/0', 'chat-wal', ?, -42)", strings.Repeat("only in the WAL 🌊 ", 700))
	exec(conn, "INSERT INTO kv(key, value) VALUES ('wal/key', 'wal value')")
	prev := snapshot(conn)
	exec(conn, "BEGIN")
	exec(conn, "UPDATE kv SET value = 'last commit' WHERE key = 'wal/key'")
	exec(conn, "INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES ('telegram/1', 'last', 'text', 'the last row', 9007199254740993)")
	exec(conn, "COMMIT")
	writeJSON("b.json", map[string]map[string][]Row{"final": snapshot(conn), "before_last": prev, "file_only": dbOnly})
	copyOpen(path, "b.db")
	closeAll(db, conn, path)
	check(os.Remove(path))
}

// fixtureC: a WAL whose last transaction never committed: a small page
// cache made SQLite spill its pages into the WAL before COMMIT.
func fixtureC() {
	db, conn, path := open("c.tmp")
	fill(conn)
	exec(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
	exec(conn, "PRAGMA wal_autocheckpoint=0")
	exec(conn, "INSERT INTO kv(key, value) VALUES ('committed', 'in the WAL')")
	exec(conn, "INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES ('telegram/2', 'c', 'text', 'committed row', 1)")
	committed := snapshot(conn)
	before := walSize(path)
	exec(conn, "PRAGMA cache_size=5")
	exec(conn, "BEGIN")
	for i := range 300 {
		exec(conn, "INSERT INTO outbox(channel, chat, kind, text, created_ms) VALUES ('telegram/2', 'c', 'text', ?, ?)",
			fmt.Sprintf("never committed %d %s", i, strings.Repeat("u", 200)), i)
		exec(conn, "UPDATE kv SET value = 'never committed' WHERE key = 'committed'")
	}
	if walSize(path) <= before {
		log.Fatal("fixture c: the open transaction did not spill into the WAL")
	}
	writeJSON("c.json", map[string]map[string][]Row{"final": committed})
	copyOpen(path, "c.db")
	exec(conn, "ROLLBACK")
	closeAll(db, conn, path)
	check(os.Remove(path))
}

func walSize(path string) int64 {
	fi, err := os.Stat(path + "-wal")
	check(err)
	return fi.Size()
}

// fixtureD: 512-byte pages, so the b-trees are deep and long texts run
// over many overflow pages.
func fixtureD() {
	db, conn, path := open("d.db", "page_size(512)")
	fill(conn)
	var ps int
	check(conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&ps))
	if ps != 512 {
		log.Fatalf("fixture d: page size %d", ps)
	}
	// The same rows as in fixture a: its JSON file serves both.
	if !reflect.DeepEqual(snapshot(conn), filled) {
		log.Fatal("fixture d: the rows differ from fixture a's")
	}
	closeAll(db, conn, path)
}

// fixtureE: a WITHOUT ROWID table, which the reader refuses by name.
func fixtureE() {
	db, conn, path := open("e.db")
	exec(conn, "CREATE TABLE pairs (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
	exec(conn, "INSERT INTO pairs VALUES ('a', 'b')")
	closeAll(db, conn, path)
}
