package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOutboxSurvivesReopen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, reopen func() *Store) {
		ctx := context.Background()
		s := reopen()
		at := time.UnixMilli(1_700_000_000_000)
		var ids []int64
		for _, text := range []string{"one", "two", "three"} {
			it, err := s.Enqueue(ctx, Item{Channel: "wechat", Chat: "u1", Kind: "final", Text: text, Created: at})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, it.ID)
		}
		if _, err := s.Enqueue(ctx, Item{Channel: "telegram", Chat: "9", Kind: "final", Text: "other", Created: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.Delivered(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s = reopen()
		defer s.Close()
		items, err := s.Pending(ctx, "wechat")
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 2 || items[0].Text != "two" || items[1].Text != "three" || !items[0].Created.Equal(at) || items[0].ID >= items[1].ID {
			t.Errorf("pending after reopen: %+v", items)
		}
	})
}

func TestClaim(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, reopen func() *Store) {
		ctx := context.Background()
		s := reopen()
		defer s.Close()
		t0 := time.UnixMilli(1_000_000)
		tests := []struct {
			channel, key string
			at           time.Time
			want         bool
		}{
			{"wechat", "m1", t0, true},
			{"wechat", "m1", t0, false},
			{"telegram", "m1", t0, true},
			{"wechat", "m2", t0.Add(time.Hour), true},
		}
		for _, tt := range tests {
			got, err := s.Claim(ctx, tt.channel, tt.key, tt.at)
			if err != nil || got != tt.want {
				t.Errorf("Claim(%s, %s) = %v, %v; want %v", tt.channel, tt.key, got, err, tt.want)
			}
		}
		if err := s.Forget(ctx, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Claim(ctx, "wechat", "m1", t0); !got {
			t.Error("a forgotten key is still seen")
		}
		if got, _ := s.Claim(ctx, "wechat", "m2", t0); got {
			t.Error("a recent key was forgotten")
		}
	})
}

func TestKV(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, reopen func() *Store) {
		ctx := context.Background()
		s := reopen()
		defer s.Close()
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get on empty: %v", err)
		}
		for _, v := range []string{"a", "b"} {
			if err := s.Put(ctx, "k", v); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, "k"); got != v || err != nil {
				t.Errorf("Get = %q, %v; want %q", got, err, v)
			}
		}
		if err := s.Put(ctx, "k", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after delete: %v", err)
		}
	})
}

// TestInbox: a question enters with its key, once; survives a reopen with
// its started mark; leaves with its answer in one step, or when dropped.
func TestInbox(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, reopen func() *Store) {
		ctx := context.Background()
		s := reopen()
		at := time.UnixMilli(1_700_000_000_000)
		ask := func(key, chat, text string) (Question, bool) {
			t.Helper()
			q, fresh, err := s.Ask(ctx, key, Question{Channel: "telegram", Chat: chat, Text: text, Created: at})
			if err != nil {
				t.Fatal(err)
			}
			return q, fresh
		}
		q1, fresh := ask("k1", "7", "first")
		if !fresh || q1.ID == 0 {
			t.Fatalf("first ask: %+v %v", q1, fresh)
		}
		if _, fresh := ask("k1", "7", "first"); fresh {
			t.Error("a key asked twice was fresh twice")
		}
		if fresh, _ := s.Claim(ctx, "telegram", "k1", at); fresh {
			t.Error("Ask did not mark the key seen")
		}
		q2, _ := ask("k2", "7", "second")
		q3, _ := ask("", "8", "no key")
		if err := s.Start(ctx, q1.ID); err != nil {
			t.Fatal(err)
		}
		s.Close()

		s = reopen()
		defer s.Close()
		qs, err := s.Questions(ctx, "telegram")
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) != 3 || qs[0].Text != "first" || !qs[0].Started || qs[1].Started || qs[2].Chat != "8" || !qs[0].Created.Equal(at) {
			t.Fatalf("after reopen: %+v", qs)
		}
		items, err := s.Answer(ctx, []Item{
			{Channel: "telegram", Chat: "7", Kind: "final", Text: "a1", Created: at},
			{Channel: "telegram", Chat: "7", Kind: "final", Text: "a2", Created: at},
		}, q1.ID)
		if err != nil || len(items) != 2 || items[0].ID == 0 || items[1].ID <= items[0].ID {
			t.Fatalf("answer: %+v %v", items, err)
		}
		if err := s.Drop(ctx, q2.ID, q3.ID); err != nil {
			t.Fatal(err)
		}
		qs, _ = s.Questions(ctx, "telegram")
		pending, _ := s.Pending(ctx, "telegram")
		if len(qs) != 0 || len(pending) != 2 {
			t.Errorf("inbox %+v, outbox %+v", qs, pending)
		}
	})
}
