//go:build unix

package store

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// sqliteShmDMS is the byte of a WAL database's -shm file that every
// connection open on it holds a read lock on, for as long as it is open
// (SQLite's os_unix.c, UNIX_SHM_DMS).
const sqliteShmDMS = 128

// sqliteHolder returns the pid of a process that has the SQLite database
// at path open in WAL mode (as the relay kept it), or 0 when none has: a
// relay from before bbolt still running on the state file that is about
// to be migrated from under it.
func sqliteHolder(path string) (int, error) {
	f, err := os.Open(path + "-shm")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: sqliteShmDMS, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, err
	}
	if lk.Type == unix.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}
