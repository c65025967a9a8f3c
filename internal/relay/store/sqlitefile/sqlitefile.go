// Package sqlitefile reads the rows of a SQLite 3 database file and of its
// write-ahead log, without linking SQLite.
//
// It exists for one job: moving the relay's old state files (SQLite, in WAL
// mode) once to their new home. Linking a full SQLite for that one-time
// migration of four tables would cost every sluice command its start-up
// memory (the driver's initialisation) and every cold build minutes of
// compiling, so this package reads the file format
// (https://www.sqlite.org/fileformat2.html) by hand, and only as much of it
// as those tables need: the database header, the schema table, the b-trees
// of rowid tables with their records and overflow pages, UTF-8 text, and
// the committed frames of the WAL. It never writes, and it reads neither
// indexes nor WITHOUT ROWID tables.
//
// Every malformed input is an error, never a panic or a hang: no page is
// visited twice while reading one table, and b-trees deeper than SQLite
// allows are refused.
package sqlitefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNoTable is returned (wrapped) by Rows for a table the schema does not
// have.
var ErrNoTable = errors.New("no such table")

// File is a database as SQLite would see it when opened: its file, and its
// WAL's last committed transaction laid over it. Its methods may be called
// concurrently; Close it after the last.
type File struct {
	db  []byte // the database file
	wal []byte // the WAL file; nil when it is not used
	// walPages maps a page number to the offset in wal of its latest
	// committed version.
	walPages map[uint32]int
	pageSize int
	usable   int    // the page size less the bytes reserved at each page's end
	nPages   uint32 // the database's size in pages
	tables   []table
}

// table is a row of the schema whose type is "table".
type table struct {
	name string
	root int64
}

// Row is one row of a table.
type Row struct {
	RowID int64
	// Values holds each stored column in declared order: nil, int64,
	// float64, string or []byte. An INTEGER PRIMARY KEY column is stored
	// as NULL (its value is RowID), so it reads as nil. A row written
	// before an ALTER TABLE ADD COLUMN has fewer values than the table
	// has columns.
	Values []any
}

const (
	magic         = "SQLite format 3\x00"
	headerSize    = 100
	minUsableSize = 480 // the spec's floor for a page less its reserved bytes
	// maxDepth is SQLite's own limit on a b-tree's depth
	// (BTCURSOR_MAX_DEPTH): a deeper tree is corrupt.
	maxDepth = 20
)

// Open reads the database at path and its write-ahead log (path+"-wal"), if
// any, as SQLite would see them: the last committed transaction in the WAL
// whose salts and checksums are valid. A WAL that is empty, missing or has
// a bad header is ignored, as SQLite ignores it.
func Open(path string) (*File, error) {
	db, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sqlitefile: %w", err)
	}
	f, err := parse(db, wal)
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: %s: %w", path, err)
	}
	return f, nil
}

func parse(db, wal []byte) (*File, error) {
	if len(db) < headerSize || string(db[:len(magic)]) != magic {
		return nil, errors.New("not a SQLite 3 database")
	}
	pageSize, usable, err := pageGeometry(db)
	if err != nil {
		return nil, err
	}
	f := &File{db: db, pageSize: pageSize, usable: usable}
	nPageFile := uint32(min(len(db)/pageSize, 1<<32-1))
	walPages, walSize, err := readWAL(wal, pageSize)
	if err != nil {
		return nil, err
	}
	if walPages != nil {
		f.wal, f.walPages = wal, walPages
		// Like SQLite, the size in the last commit frame is the size of
		// the database, whatever the file's length.
		nPageFile = walSize
	}
	f.nPages = nPageFile
	// Page 1 is read through the WAL: its latest version holds the header
	// that counts (the usable part of a page always holds the 100 bytes).
	p1, err := f.page(1)
	if err != nil {
		return nil, err
	}
	if ps, us, err := pageGeometry(p1); err != nil || ps != pageSize || us != usable {
		return nil, errors.New("page 1 in the WAL disagrees with the file on the page size")
	}
	switch enc := binary.BigEndian.Uint32(p1[56:]); enc {
	case 0, 1: // 0: no text written yet; 1: UTF-8
	case 2, 3:
		return nil, fmt.Errorf("text encoding is UTF-16 (code %d); only UTF-8 databases are read", enc)
	default:
		return nil, fmt.Errorf("unknown text encoding %d", enc)
	}
	// The size in the header counts only if the change counter matches
	// the version-valid-for number; a size beyond the pages there are
	// means pages are missing, as SQLite judges it.
	if n := binary.BigEndian.Uint32(p1[28:]); n != 0 && binary.BigEndian.Uint32(p1[24:]) == binary.BigEndian.Uint32(p1[92:]) {
		if n > nPageFile {
			return nil, fmt.Errorf("the header counts %d pages but there are %d: the file is truncated", n, nPageFile)
		}
		f.nPages = n
	}
	rows, err := f.walk(1)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	for _, r := range rows {
		// sqlite_schema's columns: type, name, tbl_name, rootpage, sql.
		if len(r.Values) < 4 {
			return nil, fmt.Errorf("schema row %d has %d columns", r.RowID, len(r.Values))
		}
		if r.Values[0] != "table" {
			continue
		}
		name, ok := r.Values[1].(string)
		root, ok2 := r.Values[3].(int64)
		if !ok || !ok2 {
			return nil, fmt.Errorf("schema row %d: a table without a name or root page", r.RowID)
		}
		f.tables = append(f.tables, table{name, root})
	}
	return f, nil
}

// pageGeometry reads the page size and the usable size from a database
// header.
func pageGeometry(h []byte) (pageSize, usable int, err error) {
	pageSize = int(binary.BigEndian.Uint16(h[16:]))
	if pageSize == 1 {
		pageSize = 65536 // which two bytes cannot hold
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return 0, 0, fmt.Errorf("invalid page size %d", pageSize)
	}
	usable = pageSize - int(h[20])
	if usable < minUsableSize {
		return 0, 0, fmt.Errorf("%d reserved bytes leave %d usable bytes in a page (at least %d are needed)", h[20], usable, minUsableSize)
	}
	return pageSize, usable, nil
}

// Tables returns the names of the database's tables, in schema order.
func (f *File) Tables() []string {
	names := make([]string, len(f.tables))
	for i, t := range f.tables {
		names[i] = t.name
	}
	return names
}

// Rows returns every row of the table, in rowid order.
func (f *File) Rows(name string) ([]Row, error) {
	if f.db == nil {
		return nil, errors.New("sqlitefile: Rows after Close")
	}
	root := int64(-1)
	if asciiEqualFold(name, "sqlite_schema") || asciiEqualFold(name, "sqlite_master") {
		root = 1
	}
	// Table names are matched as SQLite matches them: ignoring the case
	// of ASCII letters only.
	for _, t := range f.tables {
		if root < 0 && asciiEqualFold(t.name, name) {
			root = t.root
		}
	}
	if root < 0 {
		return nil, fmt.Errorf("sqlitefile: table %q: %w", name, ErrNoTable)
	}
	if root < 1 || root > int64(f.nPages) {
		return nil, fmt.Errorf("sqlitefile: table %q: root page %d is not in the database (a virtual table?)", name, root)
	}
	rows, err := f.walk(uint32(root))
	if err != nil {
		return nil, fmt.Errorf("sqlitefile: table %q: %w", name, err)
	}
	return rows, nil
}

// Close releases the file's contents.
func (f *File) Close() error {
	f.db, f.wal, f.walPages, f.tables = nil, nil, nil, nil
	return nil
}

// stored is how many pages the file and the WAL hold, at most the
// database's size.
func (f *File) stored() uint64 {
	return min(uint64(f.nPages), uint64(len(f.db)/f.pageSize+len(f.walPages)))
}

// page returns the usable part of page n, from the WAL if it holds the
// page, else from the file.
func (f *File) page(n uint32) ([]byte, error) {
	if n < 1 || n > f.nPages {
		return nil, fmt.Errorf("page %d is out of range (the database has %d)", n, f.nPages)
	}
	if off, ok := f.walPages[n]; ok {
		return f.wal[off : off+f.usable], nil
	}
	off := int64(n-1) * int64(f.pageSize)
	if off+int64(f.pageSize) > int64(len(f.db)) {
		return nil, fmt.Errorf("page %d is beyond the end of the file", n)
	}
	return f.db[off : off+int64(f.usable)], nil
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
