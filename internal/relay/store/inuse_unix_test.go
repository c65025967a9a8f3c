//go:build unix

package store

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// holdSQLite takes the lock a SQLite connection holds on path's -shm
// while it is open (os_unix.c's read lock on the DMS byte), says so on
// stdout, and keeps it until stdin closes.
func holdSQLite(path string) {
	f, err := os.OpenFile(path+"-shm", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		panic(err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: sqliteShmDMS, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		panic(err)
	}
	os.Stdout.WriteString("held\n")
	io.Copy(io.Discard, os.Stdin)
}

// A relay from before bbolt still running on its SQLite file: the new one
// refuses to migrate it from under it, naming the process, and migrates
// once it is gone.
func TestMigrationWaitsForAnOldRelayToStop(t *testing.T) {
	t.Parallel()
	path, want := fixture(t, t.TempDir(), "b.db", "b.json")
	old := exec.Command(os.Args[0], "-test.run=^$")
	old.Env = append(os.Environ(), "STORE_TEST_HOLD_SQLITE="+path)
	stdin, err := old.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := old.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); old.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the old relay's stand-in said %q, %v", line, err)
	}

	_, err = Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "open in process "+strconv.Itoa(old.Process.Pid)) {
		t.Fatalf("Open while an old relay holds the file: %v, want an error naming process %d", err, old.Process.Pid)
	}
	if sqlite, err := isSQLite(path); !sqlite || err != nil {
		t.Fatalf("the old file was moved or changed (%v, %v)", sqlite, err)
	}
	if _, err := os.Stat(path + ".migrating"); !os.IsNotExist(err) {
		t.Errorf("a copy was left behind: %v", err)
	}

	stdin.Close()
	if err := old.Wait(); err != nil {
		t.Fatal(err)
	}
	st := open(t, path)
	defer st.Close()
	checkMigrated(t, st, want)
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "relay.db.sqlite")); err != nil {
		t.Errorf("the old file is not kept beside the new one: %v", err)
	}
}
