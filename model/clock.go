package model

import "time"

// Clock is the time source of Stream's watchdog, backoff and fallback
// timeout. Tests inject a fake one (model/modeltest) so that nothing waits on
// the wall clock.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends on its channel once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a time.Timer behind an interface, with Go 1.23 semantics: after
// Reset or Stop no stale value is received.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time   { return t.t.C }
func (t systemTimer) Reset(d time.Duration) { t.t.Reset(d) }
func (t systemTimer) Stop()                 { t.t.Stop() }
