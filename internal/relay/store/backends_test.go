package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/store/pgstore"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("STORE_TEST_HOLD_SQLITE"); path != "" {
		holdSQLite(path) // the test binary as an old relay's process
		return
	}
	code := m.Run()
	if shared.pg != nil {
		shared.pg.Close()
	}
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// shared is one PostgreSQL database for the package's tests: each test's
// store is an account of its own in it, so the tests also show that
// accounts do not see each other's rows.
var shared struct {
	once sync.Once
	dsn  string
	pg   *pgstore.Store
	err  error
}

// runs numbers the tests' accounts: with -count=N a test's account of the
// previous run is still in the shared database.
var runs atomic.Int64

// account is a name no other test or run uses.
func account(t *testing.T) string { return fmt.Sprintf("%s#%d", t.Name(), runs.Add(1)) }

func sharedDB(t *testing.T) (string, *pgstore.Store) {
	t.Helper()
	dsn := pgtest.DSN(t) // skips without PostgreSQL, before the once
	shared.once.Do(func() {
		shared.dsn = dsn
		shared.pg, shared.err = pgstore.Open(context.Background(), dsn)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dsn, shared.pg
}

// forEachBackend runs f on a state file and on a PostgreSQL account
// (fenced by a lease the test holds); reopen opens the same state again.
func forEachBackend(t *testing.T, f func(t *testing.T, reopen func() *Store)) {
	t.Run("bolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "relay.db")
		f(t, func() *Store { return open(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, pg := sharedDB(t)
		ctx := context.Background()
		name := account(t)
		key := "relay/" + name
		l, err := pg.AcquireLease(ctx, key, "n1", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		f(t, func() *Store {
			s, err := OpenPostgres(ctx, dsn, name)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			s.Fence(Lease{Key: key, Node: l.Node, Epoch: l.Epoch})
			return s
		})
	})
}

// TestFence: a PostgreSQL store writes only under the channel's current
// lease; once another node took the lease, the old holder's writes fail
// and change nothing, and the new holder's go through.
func TestFence(t *testing.T) {
	t.Parallel()
	dsn, pg := sharedDB(t)
	ctx := context.Background()
	name := account(t)
	key := "relay/" + name
	openAs := func() *Store {
		s, err := OpenPostgres(ctx, dsn, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openAs(), openAs()
	at := time.UnixMilli(1_700_000_000_000)
	q := Question{Channel: "telegram", Chat: "7", Text: "hi", Created: at}
	if _, _, err := a.Ask(ctx, "k0", q); !errors.Is(err, ErrFenced) {
		t.Fatalf("a write before any lease: %v, want ErrFenced", err)
	}
	la, err := pg.AcquireLease(ctx, key, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a.Fence(Lease{Key: key, Node: "a", Epoch: la.Epoch})
	if _, fresh, err := a.Ask(ctx, "k1", q); err != nil || !fresh {
		t.Fatalf("the holder's ask: %v %v", fresh, err)
	}
	if err := pg.ReleaseLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	lb, err := pg.AcquireLease(ctx, key, "b", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b.Fence(Lease{Key: key, Node: "b", Epoch: lb.Epoch})
	writes := []struct {
		name  string
		write func(*Store) error
	}{
		{"ask", func(s *Store) error { _, _, err := s.Ask(ctx, "k2", q); return err }},
		{"claim", func(s *Store) error { _, err := s.Claim(ctx, "telegram", "k3", at); return err }},
		{"enqueue", func(s *Store) error {
			_, err := s.Enqueue(ctx, Item{Channel: "telegram", Chat: "7", Kind: "final", Text: "x", Created: at})
			return err
		}},
		{"put", func(s *Store) error { return s.Put(ctx, "cursor", "9") }},
		{"forget", func(s *Store) error { return s.Forget(ctx, at) }},
	}
	for _, w := range writes {
		if err := w.write(a); !errors.Is(err, ErrFenced) {
			t.Errorf("%s by the old holder: %v, want ErrFenced", w.name, err)
		}
	}
	if qs, _ := b.Questions(ctx, "telegram"); len(qs) != 1 {
		t.Errorf("the old holder's writes changed the inbox: %+v", qs)
	}
	if items, _ := b.Pending(ctx, "telegram"); len(items) != 0 {
		t.Errorf("the old holder's writes changed the outbox: %+v", items)
	}
	if _, err := b.Get(ctx, "cursor"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the old holder's put: %v", err)
	}
	for _, w := range writes {
		if err := w.write(b); err != nil {
			t.Errorf("%s by the new holder: %v", w.name, err)
		}
	}
	if qs, _ := b.Questions(ctx, "telegram"); len(qs) != 2 || qs[0].Text != "hi" {
		t.Errorf("the new holder's inbox: %+v", qs)
	}
}

// TestBadDSN: a connection string that cannot be parsed or a database
// without the relay's schema is a clear error, not a later failure.
func TestBadDSN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := OpenPostgres(ctx, "postgres://u:secret@127.0.0.1:notaport/db", "a"); err == nil || containsSecret(err) {
		t.Errorf("bad DSN: %v", err)
	}
	dsn := pgtest.DSN(t) // a fresh database, never migrated
	if _, err := OpenPostgres(ctx, dsn, "a"); err == nil {
		t.Error("a database without the relay's schema was opened")
	}
	if _, err := OpenPostgres(ctx, dsn, ""); err == nil {
		t.Error("an empty account was accepted")
	}
}

func containsSecret(err error) bool {
	return strings.Contains(err.Error(), "secret")
}
