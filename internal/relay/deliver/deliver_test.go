package deliver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model/modeltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 6, 20, 10, 0, 0, 0, time.UTC)

type rec struct {
	at         time.Time
	chat, text string
	err        error
}

// fakeSender records every attempt on its channel and fails as told.
type fakeSender struct {
	clock    *modeltest.Clock
	sent     chan rec
	mu       sync.Mutex
	attempts map[string]int
	fail     func(chat, text string, attempt int) error
}

func (f *fakeSender) Send(_ context.Context, chat, text string) error {
	f.mu.Lock()
	f.attempts[text]++
	n := f.attempts[text]
	fail := f.fail
	f.mu.Unlock()
	var err error
	if fail != nil {
		err = fail(chat, text, n)
	}
	f.sent <- rec{f.clock.Now(), chat, text, err}
	return err
}

type harness struct {
	t      *testing.T
	clock  *modeltest.Clock
	sender *fakeSender
	store  *store.Store
	q      *Queue
	stop   func()
}

func start(t *testing.T, p Pacing, fail func(chat, text string, attempt int) error) *harness {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, clock: modeltest.NewClock(t0), store: st}
	h.sender = &fakeSender{clock: h.clock, sent: make(chan rec, 100), attempts: map[string]int{}, fail: fail}
	h.run(p)
	return h
}

func (h *harness) run(p Pacing) {
	h.t.Helper()
	q, err := New(context.Background(), h.store, "wechat", h.sender, p, h.clock, Hooks{}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	h.q = q
	h.stop = func() { cancel(); <-done }
	h.t.Cleanup(h.stop)
}

func (h *harness) enqueue(chat string, texts ...string) {
	h.t.Helper()
	for _, s := range texts {
		if err := h.q.Enqueue(context.Background(), chat, "final", s); err != nil {
			h.t.Fatal(err)
		}
	}
}

// expect waits for the next attempt and checks it. The timeout only
// reports a hang; the times compared are the fake clock's.
func (h *harness) expect(chat, text string, at time.Duration) rec {
	h.t.Helper()
	select {
	case r := <-h.sender.sent:
		if r.chat != chat || r.text != text || !r.at.Equal(t0.Add(at)) {
			h.t.Fatalf("sent %s %q at +%s, want %s %q at +%s", r.chat, r.text, r.at.Sub(t0), chat, text, at)
		}
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatalf("nothing sent, want %s %q at +%s", chat, text, at)
	}
	return rec{}
}

// expectAll waits for the next len(want) attempts, all at t0+at, and
// checks them ("chat:text") in any order.
func (h *harness) expectAll(at time.Duration, want ...string) {
	h.t.Helper()
	var got []string
	for range want {
		select {
		case r := <-h.sender.sent:
			if !r.at.Equal(t0.Add(at)) {
				h.t.Errorf("sent %s %q at +%s, want +%s", r.chat, r.text, r.at.Sub(t0), at)
			}
			got = append(got, r.chat+":"+r.text)
		case <-time.After(10 * time.Second):
			h.t.Fatalf("sent %q, want %q", got, want)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		h.t.Fatalf("sent %q, want %q", got, want)
	}
}

// idle waits until the queue sleeps on its timer and checks that nothing
// was sent meanwhile.
func (h *harness) idle() {
	h.t.Helper()
	h.settled()
	h.clock.WaitArmed(1)
	select {
	case r := <-h.sender.sent:
		h.t.Fatalf("unexpected send %s %q at +%s", r.chat, r.text, r.at.Sub(t0))
	default:
	}
}

// settled waits until no send is in flight. A send settles on its own
// goroutine, reading the clock: the test lets it finish before it moves
// the clock (the deadline only reports a hang).
func (h *harness) settled() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.q.sending() || len(h.q.wake) > 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("a send never settled")
		}
		runtime.Gosched()
	}
}

// sending reports whether a message is in flight.
func (q *Queue) sending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight > 0
}

// advanceTo moves the fake clock to t0+d, in one step.
func (h *harness) advanceTo(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(t0.Add(d).Sub(h.clock.Now()))
}

func TestWeChatSpacing(t *testing.T) {
	t.Parallel()
	h := start(t, WeChatPacing(), nil)
	h.enqueue("u1", "one", "two", "three")
	h.expect("u1", "one", 0)
	h.idle()
	h.advanceTo(2499 * time.Millisecond)
	h.idle()
	h.advanceTo(2500 * time.Millisecond)
	h.expect("u1", "two", 2500*time.Millisecond)
	h.idle()
	h.advanceTo(5 * time.Second)
	h.expect("u1", "three", 5*time.Second)
}

func TestOrderAcrossChats(t *testing.T) {
	t.Parallel()
	p := TelegramPacing()
	p.MinInterval = 0
	h := start(t, p, nil)
	h.enqueue("a", "a1", "a2")
	h.enqueue("b", "b1", "b2")
	// Both chats go at once (in either order: they are sent side by
	// side); each chat waits a second for its next one.
	h.expectAll(0, "a:a1", "b:b1")
	h.idle()
	h.advanceTo(time.Second)
	h.expectAll(time.Second, "a:a2", "b:b2")
}

func TestThrottleCooldown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		wait time.Duration
	}{
		{"WeChat ret -2 cools down for the setting", fmt.Errorf("sendmessage: ret -2: %w", ErrThrottled), 60 * time.Second},
		{"a longer retry-after wins", &ThrottleError{RetryAfter: 90 * time.Second, Err: errors.New("429")}, 90 * time.Second},
		{"a shorter retry-after does not", &ThrottleError{RetryAfter: time.Second, Err: errors.New("429")}, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, WeChatPacing(), func(_, text string, n int) error {
				if text == "two" && n == 1 {
					return tt.err
				}
				return nil
			})
			h.enqueue("u1", "one", "two", "three")
			h.expect("u1", "one", 0)
			h.idle()
			h.advanceTo(2500 * time.Millisecond)
			h.expect("u1", "two", 2500*time.Millisecond)
			h.idle()
			h.advanceTo(2500*time.Millisecond + tt.wait - time.Millisecond)
			h.idle()
			h.advanceTo(2500*time.Millisecond + tt.wait)
			// The throttled message goes again before the next: order kept.
			h.expect("u1", "two", 2500*time.Millisecond+tt.wait)
		})
	}
}

func TestBackoffAndBreaker(t *testing.T) {
	t.Parallel()
	p := Pacing{BackoffBase: time.Second, BackoffMax: 8 * time.Second, BreakerFailures: 3, BreakerOpen: 10 * time.Minute}
	h := start(t, p, func(_, _ string, n int) error {
		if n <= 4 {
			return errors.New("connection reset")
		}
		return nil
	})
	h.enqueue("u1", "x")
	h.expect("u1", "x", 0)
	h.idle()
	h.advanceTo(time.Second) // backoff 1s
	h.expect("u1", "x", time.Second)
	h.idle()
	h.advanceTo(3 * time.Second) // backoff 2s
	h.expect("u1", "x", 3*time.Second)
	// Third failure in a row: the circuit opens for ten minutes.
	h.idle()
	h.advanceTo(3*time.Second + 10*time.Minute - time.Millisecond)
	h.idle()
	h.advanceTo(3*time.Second + 10*time.Minute)
	// Half-open: one try; it fails and the circuit opens again.
	h.expect("u1", "x", 3*time.Second+10*time.Minute)
	h.idle()
	h.advanceTo(3*time.Second + 20*time.Minute)
	h.expect("u1", "x", 3*time.Second+20*time.Minute)
}

func TestDailyBudget(t *testing.T) {
	t.Parallel()
	p := WeChatPacing()
	p.DailyBudget = 2
	h := start(t, p, nil)
	h.enqueue("u1", "one", "two", "three")
	h.expect("u1", "one", 0)
	h.idle()
	h.advanceTo(2500 * time.Millisecond)
	h.expect("u1", "two", 2500*time.Millisecond)
	h.idle()
	h.advanceTo(time.Hour)
	h.idle()
	midnight := time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC).Sub(t0)
	h.advanceTo(midnight)
	h.expect("u1", "three", midnight)
}

func TestRestartSendsUndelivered(t *testing.T) {
	t.Parallel()
	down := true
	var mu sync.Mutex
	h := start(t, WeChatPacing(), func(_, _ string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return errors.New("network down")
		}
		return nil
	})
	h.enqueue("u1", "kept one", "kept two")
	h.expect("u1", "kept one", 0)
	h.idle()
	h.stop() // the process ends with both messages undelivered

	// Both are on disk when the process starts again (checked before the
	// new queue runs: it starts sending at once).
	if items, _ := h.store.Pending(context.Background(), "wechat"); len(items) != 2 {
		t.Fatalf("stored before the restart: %+v", items)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	h.run(WeChatPacing())
	h.expect("u1", "kept one", 0)
	h.idle()
	h.advanceTo(2500 * time.Millisecond)
	h.expect("u1", "kept two", 2500*time.Millisecond)
	// The row of a delivered message goes after its send returns: wait for
	// it (the deadline only reports a hang).
	deadline := time.Now().Add(10 * time.Second)
	for {
		items, _ := h.store.Pending(context.Background(), "wechat")
		if len(items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivered messages still stored: %+v", items)
		}
		runtime.Gosched()
	}
}

func TestRefusedChatIsParked(t *testing.T) {
	t.Parallel()
	p := TelegramPacing()
	p.MinInterval = 0
	var mu sync.Mutex
	blocked := true
	h := start(t, p, func(chat, _ string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if chat == "b" && blocked {
			return fmt.Errorf("403 bot was blocked: %w", ErrRefused)
		}
		return nil
	})
	h.enqueue("b", "b1")
	h.expect("b", "b1", 0)
	h.enqueue("a", "a1")
	h.expect("a", "a1", 0)
	h.settled()
	h.advanceTo(time.Hour)
	select {
	case r := <-h.sender.sent:
		t.Fatalf("a parked chat was tried: %+v", r)
	default:
	}
	mu.Lock()
	blocked = false
	mu.Unlock()
	h.q.Wake("b")
	h.expect("b", "b1", time.Hour)
}

func TestSessionExpiredUntilResume(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	expired := true
	h := start(t, WeChatPacing(), func(_, _ string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if expired {
			return fmt.Errorf("errcode -14: %w", ErrSessionExpired)
		}
		return nil
	})
	h.enqueue("u1", "hello")
	h.expect("u1", "hello", 0)
	h.idle()
	h.advanceTo(30 * time.Minute)
	h.idle()
	mu.Lock()
	expired = false
	mu.Unlock()
	h.q.Resume()
	h.expect("u1", "hello", 30*time.Minute)
}
