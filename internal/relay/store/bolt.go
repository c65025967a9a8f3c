package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The buckets of a state file. outbox and inbox map an id (8 bytes,
// big-endian, so that a cursor walks them oldest first) to the row's
// fields (record); each bucket's sequence numbers its ids, which are never
// reused. seen maps a channel and an inbound key (seenKey) to when it was
// seen, in Unix milliseconds; kv maps a key to its value.
var (
	outboxBucket = []byte("outbox")
	inboxBucket  = []byte("inbox")
	seenBucket   = []byte("seen")
	kvBucket     = []byte("kv")
)

// createBuckets creates the buckets a state file lacks.
func createBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{outboxBucket, inboxBucket, seenBucket, kvBucket} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// lockWait bounds how long Open waits for the state file's lock: a relay
// restarted while the old process is still exiting gets it, a second
// relay on the same file fails instead of hanging.
const lockWait = 2 * time.Second

// boltBackend is a state file of its own.
type boltBackend struct {
	db *bolt.DB
}

// Open opens (creating if needed) the state file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := migrateSQLite(path); err != nil {
		return nil, fmt.Errorf("store: migrate %s from SQLite: %w", path, err)
	}
	db, err := openBolt(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.Update(createBuckets); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: create buckets in %s: %w", path, err)
	}
	return &Store{b: &boltBackend{db: db}}, nil
}

// errHeld is the error of opening a file another process has open.
var errHeld = errors.New("another process holds it (is another relay running on the same state directory?)")

// openBolt opens the bbolt file at path (0600: it holds message text) and
// locks it for this process.
func openBolt(path string) (*bolt.DB, error) {
	opts := *bolt.DefaultOptions
	opts.Timeout = lockWait
	db, err := bolt.Open(path, 0o600, &opts)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, errHeld
	}
	return db, err
}

func (b *boltBackend) close() error { return b.db.Close() }

// update runs f in a write transaction, committed (and synced to disk)
// when f returns nil.
func (b *boltBackend) update(ctx context.Context, f func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.Update(f)
}

// view runs f in a read transaction.
func (b *boltBackend) view(ctx context.Context, f func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.View(f)
}

// idKey is the key of an outbox or inbox row.
func idKey(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) }

// seenKey is the key of an inbound key of a channel in the seen bucket:
// the channel's length first, so that no two pairs share a key.
func seenKey(channel, key string) []byte {
	return append(record(nil).str(channel), key...)
}

// add puts fields under the bucket's next id and returns the id.
func add(bk *bolt.Bucket, fields record) (int64, error) {
	seq, err := bk.NextSequence()
	if err != nil {
		return 0, err
	}
	id := int64(seq)
	return id, bk.Put(idKey(id), fields)
}

func (b *boltBackend) answer(ctx context.Context, items []Item, question int64) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		out := tx.Bucket(outboxBucket)
		for i, it := range items {
			id, err := add(out, itemRecord(it))
			if err != nil {
				return err
			}
			items[i].ID = id
		}
		if question != 0 {
			return tx.Bucket(inboxBucket).Delete(idKey(question))
		}
		return nil
	})
}

func (b *boltBackend) ask(ctx context.Context, key string, q *Question) (bool, error) {
	fresh := true
	err := b.update(ctx, func(tx *bolt.Tx) error {
		if key != "" {
			var err error
			if fresh, err = claimIn(tx, q.Channel, key, q.Created); err != nil || !fresh {
				return err
			}
		}
		id, err := add(tx.Bucket(inboxBucket), questionRecord(*q))
		q.ID = id
		return err
	})
	return fresh, err
}

// claimIn records key as seen in tx and reports whether it is new.
func claimIn(tx *bolt.Tx, channel, key string, at time.Time) (bool, error) {
	seen := tx.Bucket(seenBucket)
	k := seenKey(channel, key)
	if seen.Get(k) != nil {
		return false, nil
	}
	return true, seen.Put(k, record(nil).int(at.UnixMilli()))
}

func (b *boltBackend) questions(ctx context.Context, channel string) ([]Question, error) {
	var qs []Question
	err := b.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(inboxBucket).ForEach(func(k, v []byte) error {
			q, err := readQuestion(k, v)
			if err == nil && q.Channel == channel {
				qs = append(qs, q)
			}
			return err
		})
	})
	return qs, err
}

func (b *boltBackend) start(ctx context.Context, id int64) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		inbox := tx.Bucket(inboxBucket)
		k := idKey(id)
		v := inbox.Get(k)
		if v == nil {
			return nil
		}
		q, err := readQuestion(k, v)
		if err != nil {
			return err
		}
		q.Started = true
		return inbox.Put(k, questionRecord(q))
	})
}

func (b *boltBackend) drop(ctx context.Context, ids []int64) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		inbox := tx.Bucket(inboxBucket)
		for _, id := range ids {
			if err := inbox.Delete(idKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *boltBackend) pending(ctx context.Context, channel string) ([]Item, error) {
	var items []Item
	err := b.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(outboxBucket).ForEach(func(k, v []byte) error {
			it, err := readItem(k, v)
			if err == nil && it.Channel == channel {
				items = append(items, it)
			}
			return err
		})
	})
	return items, err
}

func (b *boltBackend) delivered(ctx context.Context, id int64) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(outboxBucket).Delete(idKey(id))
	})
}

func (b *boltBackend) claim(ctx context.Context, channel, key string, at time.Time) (bool, error) {
	var fresh bool
	err := b.update(ctx, func(tx *bolt.Tx) error {
		var err error
		fresh, err = claimIn(tx, channel, key, at)
		return err
	})
	return fresh, err
}

func (b *boltBackend) forget(ctx context.Context, before time.Time) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		seen := tx.Bucket(seenBucket)
		// Deleting under a cursor may skip the next key: collect first.
		var old [][]byte
		err := seen.ForEach(func(k, v []byte) error {
			f := fields{b: v}
			if f.int() < before.UnixMilli() {
				old = append(old, k)
			}
			return f.err
		})
		if err != nil {
			return err
		}
		for _, k := range old {
			if err := seen.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *boltBackend) get(ctx context.Context, key string) (string, error) {
	var v string
	err := b.view(ctx, func(tx *bolt.Tx) error {
		raw := tx.Bucket(kvBucket).Get([]byte(key))
		if raw == nil {
			return ErrNotFound
		}
		v = string(raw)
		return nil
	})
	return v, err
}

func (b *boltBackend) put(ctx context.Context, key, value string) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		kv := tx.Bucket(kvBucket)
		if value == "" {
			return kv.Delete([]byte(key))
		}
		return kv.Put([]byte(key), []byte(value))
	})
}

// record is a row's fields as a bucket holds them, in a fixed order: a
// string as its length (uvarint) and bytes, an integer as a varint.
type record []byte

func (r record) str(s string) record { return append(binary.AppendUvarint(r, uint64(len(s))), s...) }

func (r record) int(n int64) record { return binary.AppendVarint(r, n) }

// fields reads a record's fields in the order they were written; after the
// first that does not parse, err is set and the rest read as zero.
type fields struct {
	b   []byte
	err error
}

// errCorrupt is a record that does not parse: the file was damaged.
var errCorrupt = errors.New("a record of the state file does not parse")

func (f *fields) str() string {
	n, k := binary.Uvarint(f.b)
	if f.err != nil || k <= 0 || n > uint64(len(f.b)-k) {
		f.err = errCorrupt
		return ""
	}
	s := string(f.b[k : k+int(n)]) // a copy: the bucket's bytes live only as long as the transaction
	f.b = f.b[k+int(n):]
	return s
}

func (f *fields) int() int64 {
	n, k := binary.Varint(f.b)
	if f.err != nil || k <= 0 {
		f.err = errCorrupt
		return 0
	}
	f.b = f.b[k:]
	return n
}

func itemRecord(it Item) record {
	return record(nil).str(it.Channel).str(it.Chat).str(it.Kind).str(it.Text).int(it.Created.UnixMilli())
}

func readItem(k, v []byte) (Item, error) {
	f := fields{b: v}
	it := Item{ID: int64(binary.BigEndian.Uint64(k)), Channel: f.str(), Chat: f.str(), Kind: f.str(), Text: f.str()}
	it.Created = time.UnixMilli(f.int())
	return it, f.err
}

func questionRecord(q Question) record {
	started := int64(0)
	if q.Started {
		started = 1
	}
	return record(nil).str(q.Channel).str(q.Chat).str(q.Text).int(started).int(q.Created.UnixMilli())
}

func readQuestion(k, v []byte) (Question, error) {
	f := fields{b: v}
	q := Question{ID: int64(binary.BigEndian.Uint64(k)), Channel: f.str(), Chat: f.str(), Text: f.str()}
	q.Started = f.int() != 0
	q.Created = time.UnixMilli(f.int())
	return q, f.err
}
