package deliver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model"
)

// hangingSender answers at once, except for the chats in hang: their
// first attempt (every attempt when forever) blocks until its context
// ends.
type hangingSender struct {
	start   time.Time
	hang    map[string]bool
	forever map[string]bool

	mu       sync.Mutex
	attempts map[string]int
	log      []string // "chat:text@elapsed" of the sends that succeeded
}

func (s *hangingSender) Send(ctx context.Context, chat, text string) error {
	s.mu.Lock()
	s.attempts[chat]++
	n := s.attempts[chat]
	s.mu.Unlock()
	if s.forever[chat] || (s.hang[chat] && n == 1) {
		<-ctx.Done()
		return ctx.Err()
	}
	s.mu.Lock()
	s.log = append(s.log, chat+":"+text+"@"+time.Since(s.start).String())
	s.mu.Unlock()
	return nil
}

func (s *hangingSender) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// TestStuckChatBlocksNoOther: a send that never answers holds up only its
// own chat; it is cut at the send timeout and tried again, and a queue
// that stops keeps what could not be sent.
func TestStuckChatBlocksNoOther(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := &hangingSender{start: time.Now(), hang: map[string]bool{"stuck": true}, forever: map[string]bool{"dead": true}, attempts: map[string]int{}}
		p := Pacing{SendTimeout: 30 * time.Second, BackoffBase: time.Second, BackoffMax: time.Minute, BreakerFailures: 5, BreakerOpen: time.Minute}
		q, err := New(context.Background(), st, "telegram", s, p, model.SystemClock, Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- q.Run(ctx) }()
		enqueue := func(chat string, texts ...string) {
			for _, text := range texts {
				if err := q.Enqueue(ctx, chat, "final", text); err != nil {
					t.Fatal(err)
				}
			}
		}

		enqueue("stuck", "s1", "s2")
		enqueue("ok", "o1", "o2")
		synctest.Wait()
		if got, want := s.sent(), []string{"ok:o1@0s", "ok:o2@0s"}; !slices.Equal(got, want) {
			t.Fatalf("while one chat hangs: sent %q, want %q", got, want)
		}

		// The hung send is cut at 30 s; after a 1 s backoff the chat's
		// messages go, in order.
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if got, want := s.sent(), []string{"ok:o1@0s", "ok:o2@0s", "stuck:s1@31s", "stuck:s2@31s"}; !slices.Equal(got, want) {
			t.Fatalf("after the timeout: sent %q, want %q", got, want)
		}

		// A chat that never answers, when the queue stops: its message is
		// kept for the next start.
		enqueue("dead", "d1")
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
		items, err := st.Pending(context.Background(), "telegram")
		if err != nil || len(items) != 1 || items[0].Text != "d1" {
			t.Errorf("kept after stopping: %+v, %v", items, err)
		}
	})
}

// refusingSender refuses the first send to each chat once release is
// closed, after the test had a chance to Wake the chat meanwhile.
type refusingSender struct {
	release chan struct{}

	mu   sync.Mutex
	n    int
	sent []string
}

func (s *refusingSender) Send(_ context.Context, chat, text string) error {
	s.mu.Lock()
	s.n++
	first := s.n == 1
	s.mu.Unlock()
	if first {
		<-s.release
		return fmt.Errorf("403 blocked: %w", ErrRefused)
	}
	s.mu.Lock()
	s.sent = append(s.sent, text)
	s.mu.Unlock()
	return nil
}

// TestWakeDuringSend: the chat speaks again while its message is in
// flight and then refused; the refusal does not park it, since the chat
// just showed it takes messages, and the message is tried again.
func TestWakeDuringSend(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := &refusingSender{release: make(chan struct{})}
		p := Pacing{BackoffBase: time.Second, BackoffMax: time.Minute}
		q, err := New(context.Background(), st, "telegram", s, p, model.SystemClock, Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- q.Run(ctx) }()
		if err := q.Enqueue(ctx, "u", "final", "hello"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the send is in flight
		q.Wake("u")
		close(s.release)
		time.Sleep(time.Second) // the backoff
		synctest.Wait()
		s.mu.Lock()
		sent := slices.Clone(s.sent)
		s.mu.Unlock()
		if !slices.Equal(sent, []string{"hello"}) {
			t.Errorf("sent %q after a wake during the refused send", sent)
		}
		cancel()
		<-done
	})
}

// gateSender holds every send until release is closed.
type gateSender struct {
	release chan struct{}

	mu       sync.Mutex
	attempts []string
}

func (s *gateSender) Send(_ context.Context, chat, _ string) error {
	s.mu.Lock()
	s.attempts = append(s.attempts, chat)
	s.mu.Unlock()
	<-s.release
	return nil
}

// TestBudgetCountsSendsInFlight: with chats sent side by side, the daily
// budget counts the messages in flight, so it is never overshot.
func TestBudgetCountsSendsInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := &gateSender{release: make(chan struct{})}
		q, err := New(context.Background(), st, "wechat", s, Pacing{DailyBudget: 2}, model.SystemClock, Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- q.Run(ctx) }()
		for _, chat := range []string{"a", "b", "c"} {
			if err := q.Enqueue(ctx, chat, "final", "hi "+chat); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		close(s.release)
		synctest.Wait()
		s.mu.Lock()
		n := len(s.attempts)
		s.mu.Unlock()
		if n != 2 || q.Pending("c") != 1 {
			t.Errorf("%d sends with a budget of 2 (c waits: %d)", n, q.Pending("c"))
		}
		cancel()
		<-done
	})
}
