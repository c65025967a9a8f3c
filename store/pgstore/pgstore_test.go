package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func open(t *testing.T) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

// TestMigrateIdempotent: a second Open (another node starting on the same
// database) applies nothing again and keeps the data; each migration is
// recorded once.
func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	a, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	key := store.Key{WorkDir: t.TempDir(), ID: "s"}
	l, err := a.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, json.RawMessage(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	b, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	recs, _, err := b.Load(ctx, key)
	if err != nil || len(recs) != 1 || string(recs[0]) != `{"x":1}` {
		t.Fatalf("after a second migration: %s, %v", recs, err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n != distinct {
		t.Errorf("schema_migrations holds %d rows for %d versions", n, distinct)
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Errorf("third migration: %v", err)
	}
}

// TestAppendAllOrNone: a batch with a record PostgreSQL rejects (not JSON)
// stores none of the batch, and the log appends on after it.
func TestAppendAllOrNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := open(t)
	key := store.Key{WorkDir: t.TempDir(), ID: "s"}
	l, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(ctx, json.RawMessage(`{"a":1}`), json.RawMessage(`{torn`)); err == nil {
		t.Fatal("a batch holding invalid JSON was appended")
	}
	if err := l.Append(ctx, json.RawMessage(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	recs, _, err := st.Load(ctx, key)
	if err != nil || len(recs) != 1 || string(recs[0]) != `{"b":2}` {
		t.Fatalf("records %s, %v; want only the later append", recs, err)
	}
	infos, err := st.List(ctx, key.WorkDir)
	if err != nil || len(infos) != 1 || infos[0].Size != int64(len(`{"b":2}`)+1) {
		t.Fatalf("list %+v, %v; want the size of the one record", infos, err)
	}
}

// TestRetryAfterALostAnswer: an append whose answer was lost (the
// connection broke after the commit) is retried with more records after
// it, as the agent's journal retries a batch the store refused; the batch
// is stored once, not twice. A batch that was not committed is written by
// the retry.
func TestRetryAfterALostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := open(t)
	key := store.Key{WorkDir: t.TempDir(), ID: "s"}
	l, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, b, c := json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":2}`), json.RawMessage(`{"c":3}`)
	if err := l.Append(ctx, a); err != nil {
		t.Fatal(err)
	}
	pgstore.LoseNextAck(l)
	if err := l.Append(ctx, b, b); err == nil {
		t.Fatal("the append whose answer was lost succeeded")
	}
	if err := l.Append(ctx, b, b, c); err != nil {
		t.Fatal(err)
	}
	recs, _, err := st.Load(ctx, key)
	if err != nil || len(recs) != 4 || string(recs[1]) != `{"b":2}` || string(recs[3]) != `{"c":3}` {
		t.Fatalf("records %s, %v; want a, b, b, c", recs, err)
	}
	// A batch refused for good (the server answered) is written again.
	if err := l.Append(ctx, a, json.RawMessage(`{torn`)); err == nil {
		t.Fatal("a batch holding invalid JSON was appended")
	}
	if err := l.Append(ctx, a); err != nil {
		t.Fatal(err)
	}
	if recs, _, err = st.Load(ctx, key); err != nil || len(recs) != 5 {
		t.Fatalf("records %s, %v; want 5", recs, err)
	}
}

// TestAppendToAGoneSession: an append whose session row is gone fails
// with ErrNotFound and leaves no record behind.
func TestAppendToAGoneSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.Key{WorkDir: t.TempDir(), ID: "s"}
	l, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, key.ID); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, json.RawMessage(`{"a":1}`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to a gone session: %v, want ErrNotFound", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM records WHERE id = $1`, key.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d records, %v; want none", n, err)
	}
}

// TestTwoLogsOneSession: two logs open on one session (two nodes during a
// handover) append in turn: each batch stays contiguous and none is lost.
func TestTwoLogsOneSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := open(t)
	key := store.Key{WorkDir: t.TempDir(), ID: "s"}
	a, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := st.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const batches = 20
	errs := make(chan error, 2)
	for _, l := range []struct {
		log  store.Log
		name string
	}{{a, "a"}, {b, "b"}} {
		go func() {
			for i := range batches {
				r := json.RawMessage(`{"by":"` + l.name + `","i":` + string(rune('0'+i%10)) + `}`)
				if err := l.log.Append(ctx, r, r); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	recs, _, err := st.Load(ctx, key)
	if err != nil || len(recs) != 4*batches {
		t.Fatalf("%d records, %v; want %d", len(recs), err, 4*batches)
	}
	for i := 0; i < len(recs); i += 2 {
		if string(recs[i]) != string(recs[i+1]) {
			t.Fatalf("records %d and %d, one batch, are apart: %s %s", i, i+1, recs[i], recs[i+1])
		}
	}
}
