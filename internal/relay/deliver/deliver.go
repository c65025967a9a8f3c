// Package deliver sends a channel's outgoing chat messages: in order per
// conversation, paced by the channel's settings, kept in the store until
// the platform took them — across failures and restarts.
//
// Pacing (all settings, since the platforms' real budgets are not
// published): a minimum gap between any two messages of the channel and
// between two messages to one chat; a cooldown after the platform's
// throttling error (WeChat's ret -2, Telegram's 429, whose retry_after wins
// when longer); exponential backoff per chat after other failures; a
// circuit breaker that stops all sending for a while after several failures
// in a row and then lets one message try; an optional daily budget. An
// expired session stops sending until Resume (a new login) or the pause
// ends; a chat the platform refuses for good (the user blocked the bot) is
// parked, its messages kept, until Wake (the chat spoke again).
//
// Chats are independent: each has at most one message in flight, and
// several chats' messages are in flight at once, so a chat whose sends
// hang delays no other. Every send has a deadline (Pacing.SendTimeout); a
// send that ran out of time counts as a transient failure and is tried
// again — it may have arrived, so a chat can see it twice (delivery is at
// least once, never at most once).
//
// Pacing waits on the injected clock; the send deadline is a context
// deadline (the real clock, or testing/synctest's).
package deliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model"
)

// Errors a Sender returns to say how a failure should be treated; any
// other error is transient.
var (
	// ErrThrottled: the platform refused for sending too fast. Wrap it in
	// a *ThrottleError to pass the platform's retry-after.
	ErrThrottled = errors.New("deliver: throttled by the platform")
	// ErrSessionExpired: the bot must log in again.
	ErrSessionExpired = errors.New("deliver: session expired")
	// ErrRefused: the platform will not take messages for this chat now
	// (blocked, chat gone, no conversation token).
	ErrRefused = errors.New("deliver: chat refuses messages")
)

// ThrottleError is ErrThrottled with the platform's retry-after.
type ThrottleError struct {
	RetryAfter time.Duration
	Err        error // the platform's error
}

func (e *ThrottleError) Error() string {
	return fmt.Sprintf("throttled, retry after %s: %v", e.RetryAfter, e.Err)
}

// Is makes errors.Is(err, ErrThrottled) true.
func (e *ThrottleError) Is(target error) bool { return target == ErrThrottled }
func (e *ThrottleError) Unwrap() error        { return e.Err }

// Sender sends one text message to a chat.
type Sender interface {
	Send(ctx context.Context, chat, text string) error
}

// Pacing is a channel's sending policy.
type Pacing struct {
	// MinInterval is the least time between two messages of the channel.
	MinInterval time.Duration
	// ChatInterval is the least time between two messages to one chat.
	ChatInterval time.Duration
	// Cooldown is the pause after a throttling error (the platform's
	// retry-after when longer).
	Cooldown time.Duration
	// BackoffBase and BackoffMax bound the per-chat exponential backoff
	// after a transient failure.
	BackoffBase, BackoffMax time.Duration
	// BreakerFailures failures in a row open the circuit for BreakerOpen;
	// 0 disables the breaker.
	BreakerFailures int
	BreakerOpen     time.Duration
	// DailyBudget caps the messages sent per calendar day (in the clock's
	// time zone); 0 is no cap.
	DailyBudget int
	// SessionPause is how long an expired session stops sending unless
	// Resume comes first.
	SessionPause time.Duration
	// SendTimeout bounds one send; 0 is no bound.
	SendTimeout time.Duration
}

// ErrTimeout wraps a send that got no answer within Pacing.SendTimeout.
var ErrTimeout = errors.New("deliver: no answer from the platform in time")

// WeChatPacing is the WeChat bridge's policy of seed 004: 2.5 s apart, a
// 60 s cooldown after ret -2, exponential backoff, a breaker.
func WeChatPacing() Pacing {
	return Pacing{
		MinInterval:     2500 * time.Millisecond,
		Cooldown:        60 * time.Second,
		BackoffBase:     2 * time.Second,
		BackoffMax:      2 * time.Minute,
		BreakerFailures: 5,
		BreakerOpen:     5 * time.Minute,
		SessionPause:    time.Hour,
		SendTimeout:     30 * time.Second,
	}
}

// TelegramPacing follows the Bot API's advice: about one message a second
// per chat, at most 30 a second overall, retry_after honoured.
func TelegramPacing() Pacing {
	return Pacing{
		MinInterval:     time.Second / 30,
		ChatInterval:    time.Second,
		Cooldown:        5 * time.Second,
		BackoffBase:     time.Second,
		BackoffMax:      time.Minute,
		BreakerFailures: 5,
		BreakerOpen:     2 * time.Minute,
		SessionPause:    time.Hour,
		SendTimeout:     30 * time.Second,
	}
}

// Hooks tell the relay what happened; each may be nil. They are called on
// Run's goroutines, one at a time, and must not block.
type Hooks struct {
	Sent          func(it store.Item)
	Parked        func(chat string, err error)
	SessionExpiry func(err error)
}

// Queue is a channel's outbox. Enqueue, Wake, Resume and Pending are safe
// for concurrent use; Run must be running (once) for messages to go out.
type Queue struct {
	channel string
	store   *store.Store
	sender  Sender
	pacing  Pacing
	clock   model.Clock
	hooks   Hooks
	log     *slog.Logger

	wake chan struct{}

	mu        sync.Mutex
	chats     map[string]*chat
	rr        []string  // chats in round-robin order
	notBefore time.Time // nothing is sent before this (pacing, cooldown, breaker, budget, session)
	expired   bool
	failures  int // in a row, for the breaker
	inFlight  int // messages being sent
}

type chat struct {
	items     []store.Item
	notBefore time.Time
	attempts  int
	parked    bool
	inFlight  bool // items[0] is being sent
	woken     bool // Wake came while in flight: a refusal then does not park
}

// New returns the queue of channel, holding what the store kept from
// before.
func New(ctx context.Context, st *store.Store, channel string, sender Sender, p Pacing, clock model.Clock, hooks Hooks, log *slog.Logger) (*Queue, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	q := &Queue{
		channel: channel, store: st, sender: sender, pacing: p, clock: clock, hooks: hooks, log: log,
		wake:  make(chan struct{}, 1),
		chats: map[string]*chat{},
	}
	items, err := st.Pending(ctx, channel)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		q.add(it)
	}
	if len(items) > 0 {
		log.Info("relay: undelivered messages from before", "channel", channel, "count", len(items))
	}
	return q, nil
}

func (q *Queue) add(it store.Item) {
	c := q.chats[it.Chat]
	if c == nil {
		c = &chat{}
		q.chats[it.Chat] = c
		q.rr = append(q.rr, it.Chat)
	}
	c.items = append(c.items, it)
}

// Enqueue stores a message for chat and queues it behind the chat's
// earlier messages.
func (q *Queue) Enqueue(ctx context.Context, chatID, kind, text string) error {
	it, err := q.store.Enqueue(ctx, store.Item{Channel: q.channel, Chat: chatID, Kind: kind, Text: text, Created: q.clock.Now()})
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.add(it)
	q.mu.Unlock()
	q.poke()
	return nil
}

// Message is a message to queue.
type Message struct{ Kind, Text string }

// Answer stores messages for chat, queued behind the chat's earlier ones,
// and removes question (when not 0) from the store's inbox in the same
// transaction: the question's answer and its leaving the inbox are one
// step, whenever the process dies.
func (q *Queue) Answer(ctx context.Context, chatID string, msgs []Message, question int64) error {
	now := q.clock.Now()
	items := make([]store.Item, len(msgs))
	for i, m := range msgs {
		items[i] = store.Item{Channel: q.channel, Chat: chatID, Kind: m.Kind, Text: m.Text, Created: now}
	}
	items, err := q.store.Answer(ctx, items, question)
	if err != nil {
		return err
	}
	q.mu.Lock()
	for _, it := range items {
		q.add(it)
	}
	q.mu.Unlock()
	q.poke()
	return nil
}

// Wake unparks a chat that the platform refused: it spoke again.
func (q *Queue) Wake(chatID string) {
	q.mu.Lock()
	if c := q.chats[chatID]; c != nil {
		if c.parked {
			c.parked = false
			c.attempts = 0
			c.notBefore = time.Time{}
		}
		c.woken = c.inFlight
	}
	q.mu.Unlock()
	q.poke()
}

// Resume ends a pause for an expired session: the bot logged in again.
func (q *Queue) Resume() {
	q.mu.Lock()
	if q.expired {
		q.expired = false
		q.notBefore = time.Time{}
	}
	q.mu.Unlock()
	q.poke()
}

// Pending returns the number of messages waiting for chat.
func (q *Queue) Pending(chatID string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c := q.chats[chatID]; c != nil {
		return len(c.items)
	}
	return 0
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run sends until ctx is done, waits for the sends in flight, and returns
// ctx's error. A message whose send did not succeed before ctx ended stays
// in the store.
func (q *Queue) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		now := q.clock.Now()
		it, wait := q.next(now)
		if it == nil {
			until := time.Time{}
			if wait >= 0 {
				until = now.Add(wait)
			}
			if err := q.sleep(ctx, until); err != nil {
				return err
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.send(ctx, *it)
		}()
	}
}

// send sends one message, within the send timeout, and settles it.
func (q *Queue) send(ctx context.Context, it store.Item) {
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if q.pacing.SendTimeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, q.pacing.SendTimeout)
	}
	err := q.sender.Send(sctx, it.Chat, it.Text)
	timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded)
	cancel()
	defer q.poke()
	if err != nil && ctx.Err() != nil {
		// Stopping: the message stays stored for the next start.
		q.mu.Lock()
		q.chats[it.Chat].inFlight = false
		q.inFlight--
		q.mu.Unlock()
		return
	}
	if err != nil && timedOut {
		err = fmt.Errorf("%w (%s): %w", ErrTimeout, q.pacing.SendTimeout, err)
	}
	q.settle(context.WithoutCancel(ctx), it, err)
}

// sleep waits until the clock shows until (forever when it is zero), a
// poke or ctx. The deadline is absolute, the timer's duration taken when
// it starts: the clock may have moved on since next looked at it.
func (q *Queue) sleep(ctx context.Context, until time.Time) error {
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := q.clock.NewTimer(until.Sub(q.clock.Now()))
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-q.wake:
	case <-timeout:
	}
	return nil
}

// next returns the message to send now, or how long to wait (-1: until
// poked).
func (q *Queue) next(now time.Time) (*store.Item, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// Messages in flight count against the budget: each may go.
	if q.pacing.DailyBudget > 0 && q.sentToday(now)+q.inFlight >= q.pacing.DailyBudget {
		y, m, d := now.Date()
		q.notBefore = time.Date(y, m, d+1, 0, 0, 0, 0, now.Location())
	}
	if now.Before(q.notBefore) {
		return nil, q.notBefore.Sub(now)
	}
	wait := time.Duration(-1)
	for i, id := range q.rr {
		c := q.chats[id]
		if c.parked || c.inFlight || len(c.items) == 0 {
			continue
		}
		if now.Before(c.notBefore) {
			if d := c.notBefore.Sub(now); wait < 0 || d < wait {
				wait = d
			}
			continue
		}
		// Serve chats in turn: this one goes to the back.
		q.rr = append(append(q.rr[:i:i], q.rr[i+1:]...), id)
		it := c.items[0]
		c.inFlight = true
		q.inFlight++
		q.notBefore = later(q.notBefore, now.Add(q.pacing.MinInterval))
		return &it, 0
	}
	return nil, wait
}

// settle records the outcome of sending it.
func (q *Queue) settle(ctx context.Context, it store.Item, err error) {
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.chats[it.Chat]
	c.inFlight = false
	q.inFlight--
	woken := c.woken
	c.woken = false
	q.notBefore = later(q.notBefore, now.Add(q.pacing.MinInterval))
	var te *ThrottleError
	switch {
	case err == nil:
		c.items = c.items[1:]
		c.attempts = 0
		c.notBefore = now.Add(q.pacing.ChatInterval)
		q.failures = 0
		if derr := q.store.Delivered(ctx, it.ID); derr != nil {
			// It went out; at worst it goes again after a restart.
			q.log.Error("relay: cannot mark a message delivered", "channel", q.channel, "err", derr)
		}
		if q.pacing.DailyBudget > 0 {
			q.countSent(ctx, now)
		}
		if q.hooks.Sent != nil {
			q.hooks.Sent(it)
		}
		return
	case errors.Is(err, ErrSessionExpired):
		q.expired = true
		q.notBefore = later(q.notBefore, now.Add(q.pacing.SessionPause))
		q.log.Warn("relay: session expired; sending paused until a new login", "channel", q.channel)
		if q.hooks.SessionExpiry != nil {
			q.hooks.SessionExpiry(err)
		}
		return
	case errors.Is(err, ErrRefused) && !woken:
		c.parked = true
		q.log.Warn("relay: chat refuses messages; kept until it speaks again", "channel", q.channel, "chat", it.Chat, "err", err)
		if q.hooks.Parked != nil {
			q.hooks.Parked(it.Chat, err)
		}
		return
	case errors.As(err, &te) || errors.Is(err, ErrThrottled):
		wait := q.pacing.Cooldown
		if te != nil && te.RetryAfter > wait {
			wait = te.RetryAfter
		}
		q.notBefore = later(q.notBefore, now.Add(wait))
		q.log.Warn("relay: throttled", "channel", q.channel, "cooldown", wait)
	default:
		c.attempts++
		c.notBefore = now.Add(backoff(q.pacing, c.attempts))
		q.log.Warn("relay: send failed; will retry", "channel", q.channel, "chat", it.Chat, "attempt", c.attempts, "err", err)
	}
	q.failures++
	if q.pacing.BreakerFailures > 0 && q.failures >= q.pacing.BreakerFailures {
		q.notBefore = later(q.notBefore, now.Add(q.pacing.BreakerOpen))
		// Half-open: the next failure opens the circuit again.
		q.failures = q.pacing.BreakerFailures - 1
		q.log.Warn("relay: circuit open", "channel", q.channel, "for", q.pacing.BreakerOpen)
	}
}

func backoff(p Pacing, attempts int) time.Duration {
	d := p.BackoffBase
	for i := 1; i < attempts && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (q *Queue) budgetKey(now time.Time) string {
	return "budget/" + q.channel + "/" + now.Format(time.DateOnly)
}

func (q *Queue) sentToday(now time.Time) int {
	v, err := q.store.Get(context.Background(), q.budgetKey(now))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

func (q *Queue) countSent(ctx context.Context, now time.Time) {
	n := q.sentToday(now) + 1
	if err := q.store.Put(ctx, q.budgetKey(now), strconv.Itoa(n)); err != nil {
		q.log.Error("relay: cannot count the daily budget", "err", err)
	}
}
