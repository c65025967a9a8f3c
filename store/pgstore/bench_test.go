package pgstore_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/store/pgstore"
)

// The lease and checkpoint paths a cluster node takes: per command
// (AcquireLease by the holder), per TTL third (RenewLease), on failover
// (takeover), per listing (Owner), and per checkpoint. pgtest runs the
// server with fsync off, so the times leave out the disk flush a real
// commit waits for; the WAL bytes are what a real server would write.

func benchStore(b *testing.B) (*pgstore.Store, *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	dsn := pgtest.DSN(b)
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return st, pool
}

// walBytes returns the server's WAL position: the difference of two is the
// WAL written between them (by the whole server: run benchmarks alone).
func walBytes(b *testing.B, pool *pgxpool.Pool) int64 {
	b.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func reportWAL(b *testing.B, pool *pgxpool.Pool, from int64) {
	b.ReportMetric(float64(walBytes(b, pool)-from)/float64(b.N), "WAL-B/op")
}

func BenchmarkLease(b *testing.B) {
	ctx := context.Background()
	st, pool := benchStore(b)
	b.Run("reacquire", func(b *testing.B) {
		if _, err := st.AcquireLease(ctx, "reacquire", "a", ttl); err != nil {
			b.Fatal(err)
		}
		wal := walBytes(b, pool)
		for b.Loop() {
			if _, err := st.AcquireLease(ctx, "reacquire", "a", ttl); err != nil {
				b.Fatal(err)
			}
		}
		reportWAL(b, pool, wal)
	})
	b.Run("renew", func(b *testing.B) {
		l, err := st.AcquireLease(ctx, "renew", "a", ttl)
		if err != nil {
			b.Fatal(err)
		}
		wal := walBytes(b, pool)
		for b.Loop() {
			if l, err = st.RenewLease(ctx, l, ttl); err != nil {
				b.Fatal(err)
			}
		}
		reportWAL(b, pool, wal)
	})
	// Each takeover's clock is past the last lease's expiry, and the node
	// alternates, so every acquire takes the lease over. i outlives the
	// function, which the benchmark runner may call more than once.
	i := 0
	b.Run("takeover", func(b *testing.B) {
		wal := walBytes(b, pool)
		for b.Loop() {
			at := pgstore.Later(st, time.Duration(i)*2*ttl)
			if _, err := at.AcquireLease(ctx, "takeover", fmt.Sprint("n", i%2), ttl); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportWAL(b, pool, wal)
	})
	b.Run("held", func(b *testing.B) {
		if _, err := st.AcquireLease(ctx, "held", "a", ttl); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := st.AcquireLease(ctx, "held", "b", ttl); err == nil {
				b.Fatal("acquired a held lease")
			}
		}
	})
	b.Run("owner", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Owner(ctx, "renew"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("acquire-parallel", func(b *testing.B) {
		// Many sessions at once on the pool's connections: the rate a node
		// (or several) can take distinct sessions.
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := st.AcquireLease(ctx, fmt.Sprint("p", n.Add(1)), "a", ttl); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// words are what the "text" snapshots are made of: prose and code, which
// compress about as a real conversation does.
var words = strings.Fields(`the a to of and in is it that for you this with on be not are as
	can file test func return err nil if else := string int64 ctx context error fmt Errorf
	session lease epoch node run agent tool message user assistant result read write edit
	package import type struct map slice range for go build vet { } ( ) [ ] , . ; "path" 0 1`)

// snapshot returns a JSON snapshot of about size bytes: messages of 512
// characters of random base64 ("random", the incompressible worst case) or
// of words drawn at random ("text").
func snapshot(kind string, size int) json.RawMessage {
	r := rand.New(rand.NewPCG(1, 2))
	var msgs []string
	for total := 0; total < size; total += 512 + 40 {
		var text string
		if kind == "random" {
			raw := make([]byte, 3*512/4)
			for i := range raw {
				raw[i] = byte(r.Uint32())
			}
			text = base64.StdEncoding.EncodeToString(raw)
		} else {
			var sb strings.Builder
			for sb.Len() < 512 {
				sb.WriteString(words[r.IntN(len(words))])
				sb.WriteByte(' ')
			}
			text = sb.String()
		}
		t, _ := json.Marshal(text)
		msgs = append(msgs, `{"role":"assistant","text":`+string(t)+`}`)
	}
	return json.RawMessage(`{"messages":[` + strings.Join(msgs, ",") + `],"seq":1}`)
}

func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	st, pool := benchStore(b)
	for _, c := range []struct {
		kind string
		size int
	}{{"text", 1 << 10}, {"text", 64 << 10}, {"text", 1 << 20}, {"random", 64 << 10}, {"random", 1 << 20}} {
		snap := snapshot(c.kind, c.size)
		name := fmt.Sprintf("%s/%dKiB", c.kind, c.size>>10)
		session := name
		l, err := st.AcquireLease(ctx, session, "a", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		// seq outlives the function, which the benchmark runner may call
		// more than once: a seq going back would be dropped, not saved.
		var seq int64
		b.Run("save/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(snap)))
			wal := walBytes(b, pool)
			for b.Loop() {
				seq++
				if err := st.SaveCheckpoint(ctx, l, snap, seq); err != nil {
					b.Fatal(err)
				}
			}
			reportWAL(b, pool, wal)
			var stored int64
			if err := pool.QueryRow(ctx, `SELECT pg_column_size(snapshot) FROM checkpoints WHERE session = $1`, session).Scan(&stored); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(stored), "stored-B")
		})
		b.Run("load/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(snap)))
			for b.Loop() {
				if got, _, err := st.LoadCheckpoint(ctx, session); err != nil || len(got) != len(snap) {
					b.Fatalf("loaded %d bytes, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkAppend is the journal's write while an agent streams: one batch
// of a few delta records, every 50 ms per streaming session.
//
//	go test -run '^$' -bench Append ./store/pgstore/
func BenchmarkAppend(b *testing.B) {
	st, pool := benchStore(b)
	ctx := context.Background()
	l, err := st.Create(ctx, store.Key{WorkDir: b.TempDir(), ID: "s"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := json.RawMessage(`{"type":"event","event":{"method":"assistantContentUpdated","params":{"seq":1,"chunk":"word "}}}`)
	from := walBytes(b, pool)
	b.ResetTimer()
	for range b.N {
		if err := l.Append(ctx, rec, rec, rec, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportWAL(b, pool, from)
}
