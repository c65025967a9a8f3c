// Package pgtest gives tests a throwaway PostgreSQL server from the
// Debian package: one cluster per test process, made by initdb in a
// temporary directory and listening only on a unix socket there (no TCP
// port to clash with another test or a system server), and a fresh
// database per test. TestMain calls Stop, which ends the server.
//
// PostgreSQL refuses to run as root, and CI runs the tests as root: then
// initdb and postgres run as the postgres system user the Debian package
// creates.
//
// Without the binaries the tests skip, unless SLUICE_REQUIRE_POSTGRES=1
// (CI sets it), when they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the variable that turns a missing PostgreSQL from a
// skip into a failure.
const RequireEnv = "SLUICE_REQUIRE_POSTGRES"

// errMissing marks a machine without the PostgreSQL binaries.
var errMissing = errors.New("PostgreSQL is not installed (apt-get install postgresql)")

var (
	mu      sync.Mutex
	started bool
	srv     *server
	srvErr  error
	dbs     atomic.Int64
)

// server is one running cluster.
type server struct {
	dir  string // the temporary directory: data, log and socket
	bin  string // PostgreSQL's binaries
	attr *syscall.SysProcAttr
	cmd  *exec.Cmd // the postmaster
	done chan struct{}
	err  error // why the postmaster exited, once done is closed
}

// DSN returns the connection string of a new, empty database, starting the
// server on first use, or skips (fails under SLUICE_REQUIRE_POSTGRES=1) the
// test when PostgreSQL is not installed.
func DSN(t testing.TB) string {
	t.Helper()
	s, err := get()
	if err != nil {
		if skip(err, os.Getenv(RequireEnv) == "1") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	dsn, err := s.newDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// NewDatabase is DSN for a program (a load command): it starts the server
// on first use and fails when PostgreSQL is not installed. Call Stop when
// done.
func NewDatabase() (string, error) {
	s, err := get()
	if err != nil {
		return "", err
	}
	return s.newDatabase()
}

func (s *server) newDatabase() (string, error) {
	name := fmt.Sprintf("t%d", dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return s.dsn(name), nil
}

// Stop ends the server, if one was started, and removes its directory.
// TestMain calls it after the tests.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if srv == nil {
		return
	}
	srv.stop()
	srv, started = nil, false
}

// stop asks for an immediate shutdown (SIGQUIT, what pg_ctl stop -m
// immediate sends): the data is thrown away, so there is nothing to flush
// and no client to wait for.
func (s *server) stop() {
	s.halt()
	os.RemoveAll(s.dir)
}

// halt ends a running postmaster (immediate shutdown) and waits for it.
func (s *server) halt() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// skip tells whether a server that could not be had skips the test: only
// for want of the binaries, and only where they are not required.
func skip(err error, required bool) bool {
	return errors.Is(err, errMissing) && !required
}

func get() (*server, error) {
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		srv, srvErr = start()
	}
	return srv, srvErr
}

// binDir finds the newest installed PostgreSQL's binaries.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", errMissing
	}
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return found[0], nil
}

// start runs initdb, then the postmaster as this process's child (not
// through pg_ctl, which would detach it): on Linux the child is killed
// with this process (Pdeathsig), so a test binary that panics or times out
// leaves no server behind (see procAttr).
func start() (*server, error) {
	s, err := initdb()
	if err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

// initdb makes a cluster in a new temporary directory.
func initdb() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, err
	}
	attr := procAttr()
	if os.Geteuid() == 0 {
		cred, err := postgresUser()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		attr.Credential = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s := &server{dir: dir, bin: bin, attr: attr}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = attr
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	if err := requirePasswords(filepath.Join(s.data(), "pg_hba.conf")); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: pg_hba.conf: %w", err)
	}
	return s, nil
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }

// run starts the postmaster on the cluster and waits until it is ready.
func (s *server) run() error {
	logPath := filepath.Join(s.dir, "log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: log: %w", err)
	}
	defer logf.Close()
	// Only the socket in dir: no TCP port, so nothing clashes. fsync and
	// full-page writes off: the cluster dies with the test run, and a
	// loaded CI machine need not wait on the disk.
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data(),
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.SysProcAttr = s.attr
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: postgres: %w", err)
	}
	s.cmd, s.done, s.err = cmd, make(chan struct{}), nil
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := s.ready(); err != nil {
		s.halt()
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("pgtest: postgres did not start: %v\n%s", err, log)
	}
	return nil
}

// Server is a PostgreSQL server of one test's own, not shared: the test
// may stop it at once, as `pg_ctl stop -m immediate` does, and start it
// again on the same data, to see what its clients do meanwhile.
type Server struct{ s *server }

// Own starts a server for t alone, removed when t ends; it skips or fails
// as DSN does when PostgreSQL is not installed.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := initdb()
	if err == nil {
		if err = s.run(); err != nil {
			os.RemoveAll(s.dir)
		}
	}
	if err != nil {
		if skip(err, os.Getenv(RequireEnv) == "1") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return &Server{s}
}

// DSN returns the connection string of a new, empty database.
func (o *Server) DSN(t testing.TB) string {
	t.Helper()
	dsn, err := o.s.newDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Stop stops the server at once (SIGQUIT: immediate shutdown, the
// clients' connections cut, no checkpoint), keeping its data.
func (o *Server) Stop() { o.s.halt() }

// Start starts the stopped server again, on the same socket and data.
func (o *Server) Start() error { return o.s.run() }

// ready waits until the server accepts a connection, for as long as a
// loaded machine may need, and returns early if the server exits.
func (s *server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// postgresUser is the account PostgreSQL runs as when the tests run as
// root, which it refuses.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("host=%s port=5432 user=postgres dbname=%s sslmode=disable", s.dir, db)
}

// passwordRole is the group whose members must give their password
// (PasswordDSN); every other role is trusted.
const passwordRole = "password_users"

// requirePasswords puts a line before initdb's "trust" ones: the members
// of passwordRole log in with a SCRAM password.
func requirePasswords(hba string) error {
	conf, err := os.ReadFile(hba)
	if err != nil {
		return err
	}
	return os.WriteFile(hba, append([]byte("local all +"+passwordRole+" scram-sha-256\n"), conf...), 0o600)
}

// PasswordDSN is DSN for a role that must log in with a password: it
// returns the connection string of a new, empty database without the
// password (dsn), and the password, which the client must give some
// other way (PGPASSWORD, a passfile).
func PasswordDSN(t testing.TB) (dsn, password string) {
	t.Helper()
	s, err := get()
	if err != nil {
		if skip(err, os.Getenv(RequireEnv) == "1") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	dsn, password, err = s.passwordDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn, password
}

func (s *server) passwordDatabase() (string, string, error) {
	n := dbs.Add(1)
	db, role := fmt.Sprintf("t%d", n), fmt.Sprintf("u%d", n)
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	password := "pw-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		// Tests run in parallel: the group is made once, by whichever
		// comes first. Two made at once collide on the catalog's unique
		// index (unique_violation) rather than as duplicate_object.
		`DO $$ BEGIN CREATE ROLE ` + passwordRole + `; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE %s", role, password, passwordRole),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", db, role),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", "", err
		}
	}
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable", s.dir, role, db), password, nil
}
