package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/internal/relay/store/sqlitefile"
)

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// migrateSQLite makes the state file at path, if the relay kept it in
// SQLite (its format before bbolt), a bbolt file holding the same rows,
// and keeps the old file beside it as path+".sqlite" (its -wal and -shm
// too). Ids, and the sequences that number new ones, carry over.
//
// The copy is built as path+".migrating", in one transaction, synced, and
// only then are the files renamed: path away, the copy in its place. A
// crash before path is renamed leaves it as it was, and the next Open
// starts over; a crash after leaves path missing beside a complete copy,
// which the next Open puts in place. The copy's lock (bbolt's) keeps
// another process out meanwhile, and is held until the copy is in place.
func migrateSQLite(path string) error {
	tmp := path + ".migrating"
	old, err := isSQLite(path)
	if err != nil {
		return err
	}
	if !old {
		if _, err := os.Lstat(tmp); errors.Is(err, fs.ErrNotExist) {
			return nil // the common case: a bbolt file, or none yet
		} else if err != nil {
			return err
		}
	}
	if old {
		// An older relay still running on the file would go on writing to
		// it after the copy, and what it wrote would be lost.
		if pid, err := sqliteHolder(path); err != nil {
			return fmt.Errorf("check whether %s is in use: %w", path, err)
		} else if pid != 0 {
			return fmt.Errorf("it is open in process %d (a relay from before this version, still running?): stop that, then start this one, which moves the state to its new format", pid)
		}
	}
	db, err := openCopy(tmp)
	if err != nil {
		return err
	}
	defer db.Close()
	// Again, holding the lock: another process may have migrated the file
	// while this one waited for it.
	if old, err = isSQLite(path); err != nil {
		return err
	}
	switch gone, err := missing(path); {
	case err != nil:
		return err
	case old:
		if err := copySQLite(path, db); err != nil {
			return err
		}
		// The copy's name is on disk before path's goes.
		if err := syncDir(filepath.Dir(path)); err != nil {
			return err
		}
		if err := os.Rename(path, path+".sqlite"); err != nil {
			return err
		}
	case gone && copied(db):
		// A crash after path was renamed: finish.
	default:
		// A copy that never committed, its state file gone since; or the
		// migration another process finished while this one waited (and
		// tmp, if it exists, is this one's empty file).
		if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Rename(path+suffix, path+".sqlite"+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// isSQLite reports whether the file at path is a SQLite database; a
// missing file is not.
func isSQLite(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return string(head) == sqliteMagic, nil
}

// missing reports whether nothing is at path.
func missing(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return false, err
}

// openCopy opens (and locks) the migration's copy at tmp. A file bbolt
// cannot read there is what a crash leaves while bbolt creates one: it is
// made again.
func openCopy(tmp string) (*bolt.DB, error) {
	db, err := openBolt(tmp)
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
		if err = os.Remove(tmp); err == nil {
			db, err = openBolt(tmp)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tmp, err)
	}
	return db, nil
}

// copied reports whether db holds a committed copy: copySQLite creates
// the buckets in the transaction that fills them.
func copied(db *bolt.DB) bool {
	var ok bool
	db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(outboxBucket) != nil
		return nil
	})
	return ok
}

// copySQLite copies the rows of the SQLite state file at path into db, in
// one transaction: outbox and inbox by id (each bucket's sequence goes on
// from SQLite's), seen keys with their times, and values. A table the file
// lacks (written by a relay older than the table) is empty.
func copySQLite(path string, db *bolt.DB) error {
	f, err := sqlitefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	seqs := map[string]int64{}
	err = copyRows(f, "sqlite_sequence", func(_ int64, c columns) error {
		seqs[c.str(0)] = c.int(1)
		return nil
	})
	if err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		// What an earlier attempt copied goes: the old file may have
		// changed since (a downgraded relay ran on it).
		for _, name := range [][]byte{outboxBucket, inboxBucket, seenBucket, kvBucket} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
		}
		if err := createBuckets(tx); err != nil {
			return err
		}
		// The columns in declared order; id, an INTEGER PRIMARY KEY, reads
		// as nil: the row id is its value.
		outbox, inbox, seen, kv := tx.Bucket(outboxBucket), tx.Bucket(inboxBucket), tx.Bucket(seenBucket), tx.Bucket(kvBucket)
		copies := []struct {
			table string
			// seq is the bucket whose sequence goes on from the table's
			// (nil: the table has no AUTOINCREMENT id).
			seq *bolt.Bucket
			put func(id int64, c columns) error
		}{
			{"outbox", outbox, func(id int64, c columns) error {
				it := Item{Channel: c.str(1), Chat: c.str(2), Kind: c.str(3), Text: c.str(4), Created: time.UnixMilli(c.int(5))}
				return outbox.Put(idKey(id), itemRecord(it))
			}},
			{"inbox", inbox, func(id int64, c columns) error {
				q := Question{Channel: c.str(1), Chat: c.str(2), Text: c.str(3), Started: c.int(4) != 0, Created: time.UnixMilli(c.int(5))}
				return inbox.Put(idKey(id), questionRecord(q))
			}},
			{"seen", nil, func(_ int64, c columns) error {
				return seen.Put(seenKey(c.str(0), c.str(1)), record(nil).int(c.int(2)))
			}},
			{"kv", nil, func(_ int64, c columns) error {
				// An empty value is no value (Put deletes the key); an
				// empty key is one bbolt cannot hold.
				if c.str(0) == "" || c.str(1) == "" {
					return nil
				}
				return kv.Put([]byte(c.str(0)), []byte(c.str(1)))
			}},
		}
		for _, cp := range copies {
			last := int64(0)
			err := copyRows(f, cp.table, func(id int64, c columns) error {
				last = id
				return cp.put(id, c)
			})
			if err != nil {
				return err
			}
			if cp.seq != nil {
				if err := cp.seq.SetSequence(uint64(max(last, seqs[cp.table]))); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// copyRows calls put with each row of a table, in rowid order; a table the
// file lacks has none.
func copyRows(f *sqlitefile.File, table string, put func(rowid int64, c columns) error) error {
	rows, err := f.Rows(table)
	if errors.Is(err, sqlitefile.ErrNoTable) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := put(r.RowID, r.Values); err != nil {
			return fmt.Errorf("table %s, row %d: %w", table, r.RowID, err)
		}
	}
	return nil
}

// columns are a SQLite row's values, read as the old store's queries read
// them: a column a row lacks (added after it was written) or NULL is the
// zero value, and a value of another type is converted as SQLite's CAST
// would, so that no row is refused for its typing.
type columns []any

func (c columns) str(i int) string {
	if i >= len(c) {
		return ""
	}
	switch v := c[i].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

func (c columns) int(i int) int64 {
	if i >= len(c) {
		return 0
	}
	switch v := c[i].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case string, []byte:
		n, _ := strconv.ParseInt(c.str(i), 10, 64)
		return n
	}
	return 0
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
