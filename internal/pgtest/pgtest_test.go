package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestSkip(t *testing.T) {
	t.Parallel()
	other := errors.New("initdb: permission denied")
	for _, tc := range []struct {
		err      error
		required bool
		want     bool
	}{
		{errMissing, false, true},
		{errMissing, true, false}, // CI: a missing server fails
		{fmt.Errorf("wrapped: %w", errMissing), false, true},
		{other, false, false}, // a broken server never skips
		{other, true, false},
	} {
		if got := skip(tc.err, tc.required); got != tc.want {
			t.Errorf("skip(%v, required=%v) = %v, want %v", tc.err, tc.required, got, tc.want)
		}
	}
}

// TestStartStop: the server serves a fresh database, and Stop ends it and
// removes its directory.
func TestStartStop(t *testing.T) {
	ctx := context.Background()
	dsn := DSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables, %v; want an empty database", tables, err)
	}
	conn.Close(ctx)
	mu.Lock()
	dir, proc := srv.dir, srv.cmd.Process
	mu.Unlock()
	Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", dir, err)
	}
	// Stop waited for the postmaster: it is reaped, so it cannot be signalled.
	if err := proc.Signal(syscall.Signal(0)); err == nil {
		t.Errorf("postmaster %d still running", proc.Pid)
	}
	if c, err := pgx.Connect(ctx, dsn); err == nil {
		c.Close(ctx)
		t.Error("connected after Stop")
	}
}

// TestPasswordDSN: the role of PasswordDSN is refused without its password
// and let in with it.
func TestPasswordDSN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, password := PasswordDSN(t)
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		conn.Close(ctx)
		t.Fatal("connected without the password")
	}
	if conn, err := pgx.Connect(ctx, dsn+" password=wrong"); err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password")
	}
	conn, err := pgx.Connect(ctx, dsn+" password="+password)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatalf("the role cannot use its database: %v", err)
	}
}

// TestOwnStopsAndStartsAgain: a test's own server refuses connections
// while stopped and serves its data again once started.
func TestOwnStopsAndStartsAgain(t *testing.T) {
	t.Parallel()
	srv := Own(t)
	dsn := srv.DSN(t)
	ctx := t.Context()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := exec(`SELECT 1`); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := exec(`SELECT n FROM kept`); err != nil {
		t.Fatal(err)
	}
}
