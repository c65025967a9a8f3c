package store

import (
	"context"
	"errors"
	"path/filepath"
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
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	s := open(t, path)
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

	s = open(t, path)
	defer s.Close()
	items, err := s.Pending(ctx, "wechat")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Text != "two" || items[1].Text != "three" || !items[0].Created.Equal(at) || items[0].ID >= items[1].ID {
		t.Errorf("pending after reopen: %+v", items)
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "relay.db"))
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
}

func TestKV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "relay.db"))
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
}
