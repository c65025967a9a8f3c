// Package modeltest holds test doubles for code that uses package model: a
// fake clock for Stream's watchdog and backoff, and a scripted provider
// (Script) with builders of its responses.
package modeltest

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/model"
)

// Clock is a model.Clock whose time moves only when Advance is called.
type Clock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers map[*timer]struct{} // armed timers
}

// NewClock returns a fake clock showing now.
func NewClock(now time.Time) *Clock {
	c := &Clock{now: now, timers: make(map[*timer]struct{})}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns an armed timer that fires when the clock reaches d from
// now.
func (c *Clock) NewTimer(d time.Duration) model.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock by d and fires the timers that are then due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.when.After(c.now) {
			delete(c.timers, t)
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
	c.cond.Broadcast()
}

// WaitArmed blocks until at least n timers are armed: a test calls it before
// Advance so that the code under test has set the timer the advance is for.
func (c *Clock) WaitArmed(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond.Wait()
	}
}

type timer struct {
	c    *Clock
	ch   chan time.Time
	when time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Reset(d time.Duration) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t.drain()
	t.when = c.now.Add(d)
	if d <= 0 {
		delete(c.timers, t)
		t.ch <- c.now
		return
	}
	c.timers[t] = struct{}{}
	c.cond.Broadcast()
}

func (t *timer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	delete(t.c.timers, t)
	t.c.cond.Broadcast()
}

func (t *timer) drain() {
	select {
	case <-t.ch:
	default:
	}
}
