package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of StreamOptions.
const (
	DefaultMaxRetries      = 10
	DefaultFallbackAfter   = 3
	DefaultBaseDelay       = 500 * time.Millisecond
	DefaultMaxDelay        = 32 * time.Second
	DefaultMaxRetryAfter   = 60 * time.Second
	DefaultStallWarning    = 10 * time.Second
	DefaultIdleTimeout     = 60 * time.Second
	DefaultCompleteTimeout = 10 * time.Minute
	// DefaultMaxResponseSize bounds one answer's body. The longest real
	// answers (128k output tokens streamed a few tokens per event, web
	// search results) stay well under it.
	DefaultMaxResponseSize = 64 << 20
)

// FallbackModelAfter is how many consecutive answers that the model is
// unavailable (overloaded, 5xx) switch to the next of
// StreamOptions.FallbackModels, as Claude Code switches.
const FallbackModelAfter = 3

// StreamOptions configure Stream. The zero value gives the defaults.
type StreamOptions struct {
	// MaxRetries bounds the retries of one call: 0 means DefaultMaxRetries,
	// a negative value none.
	MaxRetries int
	// FallbackAfter is how many consecutive failed streams (a stream that
	// broke after it began, an error event, an idle timeout) make the next
	// attempt one non-streaming request: 0 means DefaultFallbackAfter, a
	// negative value never. The fallback is also tried once before Stream
	// gives up on a retryable failure.
	FallbackAfter int
	// FallbackModels are the models to ask, in order, when the request's
	// model is unavailable: after FallbackModelAfter consecutive
	// overloaded or 5xx answers the next attempt asks the next model, at
	// once and with its own retries.
	FallbackModels []string
	// BaseDelay and MaxDelay shape the exponential backoff: BaseDelay
	// doubled per retry, at most MaxDelay, minus up to a quarter of jitter.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter caps the wait a server asks for in retry-after-ms or
	// retry-after; 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// StallWarning is how long without content makes Stream yield
	// PartStalled (the attempt goes on); IdleTimeout how long aborts the
	// attempt and retries it. 0 means the default, a negative value never.
	// Content is a part of the response: keep-alives (ping events,
	// comments) may keep the connection open but are not progress, so
	// that a server that only pings does not hang the call.
	StallWarning, IdleTimeout time.Duration
	// MaxResponseSize bounds the bytes of one answer's body, streamed or
	// not (providers read it through WatchBody): past it the attempt fails
	// with ErrResponseTooLarge. 0 means DefaultMaxResponseSize, a negative
	// value no bound.
	MaxResponseSize int64
	// CompleteTimeout bounds the non-streaming fallback request, which has
	// no bytes to watch until it is answered whole: 0 means
	// DefaultCompleteTimeout, a negative value no bound.
	CompleteTimeout time.Duration

	// Clock is the time source of the watchdog, the backoff and the
	// fallback timeout; nil means SystemClock.
	Clock Clock
	// Sleep waits d or until ctx is done, returning ctx's error; nil waits
	// on Clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1); nil uses math/rand/v2.
	Jitter func() float64
}

// StreamOptionsFromEnv reads SLUICE_STREAM_STALL_WARNING and
// SLUICE_STREAM_IDLE_TIMEOUT (Go durations such as "90s"; "0" turns the
// watch off), SLUICE_STREAM_MAX_RETRIES and SLUICE_MAX_RESPONSE_SIZE (bytes,
// with an optional KiB, MiB or GiB suffix) through getenv (os.Getenv), on
// top of opts.
func StreamOptionsFromEnv(opts StreamOptions, getenv func(string) string) (StreamOptions, error) {
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{
		{"SLUICE_STREAM_STALL_WARNING", &opts.StallWarning},
		{"SLUICE_STREAM_IDLE_TIMEOUT", &opts.IdleTimeout},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return opts, fmt.Errorf("%s=%q: want a duration such as 90s, or 0 to turn it off", v.name, s)
		}
		if d == 0 {
			d = -1
		}
		*v.dst = d
	}
	if s := getenv("SLUICE_STREAM_MAX_RETRIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return opts, fmt.Errorf("SLUICE_STREAM_MAX_RETRIES=%q: want a number of retries", s)
		}
		if n == 0 {
			n = -1
		}
		opts.MaxRetries = n
	}
	if s := getenv("SLUICE_MAX_RESPONSE_SIZE"); s != "" {
		n, err := parseSize(s)
		if err != nil {
			return opts, fmt.Errorf("SLUICE_MAX_RESPONSE_SIZE=%q: want a size in bytes such as 128MiB", s)
		}
		opts.MaxResponseSize = n
	}
	return opts, nil
}

// parseSize reads a positive number of bytes with an optional binary
// suffix.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

func (o StreamOptions) withDefaults() StreamOptions {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxRetries, DefaultMaxRetries)
	def(&o.FallbackAfter, DefaultFallbackAfter)
	defDur(&o.BaseDelay, DefaultBaseDelay)
	defDur(&o.MaxDelay, DefaultMaxDelay)
	defDur(&o.MaxRetryAfter, DefaultMaxRetryAfter)
	defDur(&o.StallWarning, DefaultStallWarning)
	defDur(&o.IdleTimeout, DefaultIdleTimeout)
	defDur(&o.CompleteTimeout, DefaultCompleteTimeout)
	if o.MaxResponseSize == 0 {
		o.MaxResponseSize = DefaultMaxResponseSize
	}
	if o.Clock == nil {
		o.Clock = SystemClock
	}
	if o.Sleep == nil {
		clock := o.Clock
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			t := clock.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C():
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	return o
}

// Stream sends req through p and yields the response's parts, surviving
// what real servers do:
//
//   - A failed attempt (408, 409, 429, 5xx, 529, a connection error, an
//     error event, a stream that breaks or ends without its final event, a
//     200 that is not an event stream, an idle timeout) is retried with
//     exponential backoff and jitter, or after the wait the server asked
//     for. Before waiting, Stream yields PartRetry: everything yielded since
//     the attempt's PartMessageStart is void.
//   - 400, 401, 403, 404, 413, a context overflow (ErrContextOverflow) and
//     any error the server marked x-should-retry: false are not retried:
//     Stream yields the error, whose message says what to do.
//   - A stream that cannot be decoded (ErrMalformedEvent) is retried once
//     (a frame may have been corrupted on the way); when the retry cannot
//     be decoded either, the failure is the server's answer and would
//     recur: the non-streaming request is tried at once, and if it fails
//     too its error ends the call.
//   - The watchdog measures the time since the response arrived or last
//     made progress (a part): past StallWarning it yields PartStalled once,
//     past IdleTimeout it aborts the attempt and retries it. Keep-alives
//     (pings, comments) are no progress.
//   - An answer larger than MaxResponseSize fails with ErrResponseTooLarge.
//   - After FallbackAfter consecutive failed streams, and before giving up
//     on a retryable failure, one non-streaming request (Provider.Complete)
//     is tried; its response is yielded as the same parts a stream would
//     give.
//
// The iterator yields a non-nil error at most once, as its last value; a
// response that ends with PartMessageStop is a success. When the consumer
// stops early (break), Stream cancels the attempt, which releases the HTTP
// connection, and returns only after the provider's goroutine has ended.
// Cancelling ctx ends the stream with ctx's error.
func Stream(ctx context.Context, p Provider, req *Request, opts StreamOptions) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) {
		s := &streamer{p: p, req: req, o: opts.withDefaults(), fallbacks: opts.FallbackModels}
		s.run(ctx, yield)
	}
}

type streamer struct {
	p   Provider
	req *Request
	o   StreamOptions
	// fallbacks are the fallback models not asked yet.
	fallbacks []string
}

func (s *streamer) run(ctx context.Context, yield func(Part, error) bool) {
	retries, streamFailures := 0, 0
	malformed := 0      // consecutive attempts that failed with ErrMalformedEvent
	busy := 0           // consecutive attempts that found the model unavailable
	var streamErr error // the last streaming attempt's failure
	fallback := false
	for {
		var (
			err            error
			stopped, began bool
		)
		if fallback {
			stopped, err = s.complete(ctx, yield)
		} else {
			stopped, began, err = s.attempt(ctx, yield)
		}
		if stopped || err == nil {
			return
		}
		if ctx.Err() != nil {
			yield(Part{}, context.Cause(ctx))
			return
		}
		if fallback && streamErr != nil {
			// The fallback's failure alone would hide why streaming was
			// given up.
			err = fmt.Errorf("%w (the non-streaming request, tried after the stream failed: %v)", err, streamErr)
		}
		if fallback || !retryable(err) {
			yield(Part{}, err)
			return
		}
		streamErr = err
		if busy = busy + 1; !unavailable(err) {
			busy = 0
		}
		if busy >= FallbackModelAfter && len(s.fallbacks) > 0 {
			req := *s.req
			req.Model, s.fallbacks = s.fallbacks[0], s.fallbacks[1:]
			s.req = &req
			retries++
			if !yield(Part{Type: PartRetry, Retry: &Retry{Attempt: retries, Err: err, Model: req.Model}}, nil) {
				return
			}
			// The fallback model gets retries of its own.
			retries, streamFailures, malformed, busy = 0, 0, 0, 0
			continue
		}
		if !errors.Is(err, ErrMalformedEvent) {
			malformed = 0
		} else if malformed++; malformed >= 2 {
			// A stream that two attempts in a row could not decode will
			// not decode the next time either (one bad attempt may be a
			// corrupted frame): the non-streaming request, whose answer
			// has another shape, is the one thing left to try, at once.
			if s.o.FallbackAfter < 0 {
				yield(Part{}, fmt.Errorf("model: the answer could not be decoded twice in a row: %w", err))
				return
			}
			retries++
			fallback = true
			if !yield(Part{Type: PartRetry, Retry: &Retry{Attempt: retries, Err: err, Fallback: true}}, nil) {
				return
			}
			continue
		}
		if began || streamFailure(err) {
			streamFailures++
		} else {
			streamFailures = 0
		}
		exhausted := retries >= s.o.MaxRetries
		switch {
		case s.o.FallbackAfter > 0 && (streamFailures >= s.o.FallbackAfter || exhausted):
			fallback = true
		case exhausted:
			yield(Part{}, fmt.Errorf("model: giving up after %d attempts: %w", retries+1, err))
			return
		}
		retries++
		delay := s.delay(retries, err)
		if !yield(Part{Type: PartRetry, Retry: &Retry{Attempt: retries, Delay: delay, Err: err, Fallback: fallback}}, nil) {
			return
		}
		if err := s.o.Sleep(ctx, delay); err != nil {
			yield(Part{}, err)
			return
		}
	}
}

// delay is the wait before retry number n (1 for the first) after err.
func (s *streamer) delay(n int, err error) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return min(apiErr.RetryAfter, s.o.MaxRetryAfter)
	}
	d := s.o.MaxDelay
	if n <= 30 { // beyond, the shift overflows and the cap applies anyway
		d = min(s.o.BaseDelay<<(n-1), s.o.MaxDelay)
	}
	return d - time.Duration(float64(d/4)*s.o.Jitter())
}

// retryable reports whether another attempt may succeed where err failed.
// Errors of unknown kind are retried (they come from the network or the
// server); the retries are bounded.
func retryable(err error) bool {
	var apiErr *APIError
	switch {
	case errors.Is(err, ErrContextOverflow), errors.Is(err, ErrEventTooLarge), errors.Is(err, ErrInvalidRequest),
		errors.Is(err, ErrResponseTooLarge), errors.Is(err, ErrRedirect):
		return false
	case errors.As(err, &apiErr):
		return apiErr.Retryable()
	}
	return true
}

// unavailable reports whether err says the model cannot serve now: it is
// overloaded, or the server failed (5xx).
func unavailable(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && (apiErr.Status >= 500 || apiErr.Type == "overloaded_error" || apiErr.Type == "api_error")
}

// streamFailure reports whether err broke a stream rather than its request.
func streamFailure(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status == 0 // an error event inside a 200
	}
	return errors.Is(err, ErrIncomplete) || errors.Is(err, ErrNotEventStream) ||
		errors.Is(err, ErrIdleTimeout) || errors.Is(err, ErrMalformedEvent)
}

type item struct {
	part Part
	err  error
}

// errAttemptOver cancels an attempt's context once Stream is done with it.
var errAttemptOver = errors.New("model: attempt over")

// attempt streams once. It returns err == nil when the response ended with
// PartMessageStop, stopped when the consumer stopped, and began when any
// part was yielded.
func (s *streamer) attempt(ctx context.Context, yield func(Part, error) bool) (stopped, began bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	w := &watch{clock: s.o.Clock, max: s.o.MaxResponseSize}
	w.touch()
	actx = context.WithValue(actx, watchKey{}, w)

	// The provider runs in its own goroutine so that the watchdog can act
	// while it is blocked reading. Cancelling actx makes it stop: net/http
	// aborts the body read, and a put waiting for room gives way.
	parts := newHandoff()
	go func() {
		defer close(parts.done)
		defer parts.close()
		for part, err := range s.p.Stream(actx, s.req) {
			if actx.Err() != nil || !parts.put(actx, item{part, err}) || err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel(errAttemptOver)
		<-parts.done // no leak, body closed
	}()

	var (
		timer     Timer
		timerC    <-chan time.Time      // nil without a watchdog: never ready
		stalledAt int64            = -1 // w.last when PartStalled was yielded
	)
	if s.o.StallWarning > 0 || s.o.IdleTimeout > 0 {
		timer = s.o.Clock.NewTimer(s.nextCheck(0, false))
		defer timer.Stop()
		timerC = timer.C()
	}
	var batch []item
	for {
		select {
		case <-parts.ready:
			var closed bool
			batch, closed = parts.take(batch)
			for _, it := range batch {
				if stopped, done, err := s.handle(it, true, &began, yield); done {
					return stopped, began, err
				}
				if ctx.Err() != nil {
					// As soon as between parts arriving one by one.
					return false, began, context.Cause(ctx)
				}
			}
			// The parts are a sign of life, and the time spent in the
			// consumer is not time waiting for the server: the watchdog
			// (below, in this goroutine) counts from here.
			w.touch()
			if closed {
				_, _, err := s.handle(item{}, false, &began, yield)
				return false, began, err
			}
		case <-timerC:
			last := w.last.Load()
			idle := s.o.Clock.Now().Sub(time.Unix(0, last))
			if s.o.IdleTimeout > 0 && idle >= s.o.IdleTimeout {
				cancel(ErrIdleTimeout)
				return false, began, fmt.Errorf("%w: no data for %v", ErrIdleTimeout, idle.Round(time.Millisecond))
			}
			stalled := stalledAt == last
			if s.o.StallWarning > 0 && idle >= s.o.StallWarning && !stalled {
				stalledAt, stalled = last, true
				if !yield(Part{Type: PartStalled, Idle: idle}, nil) {
					return true, began, nil
				}
			}
			timer.Reset(s.nextCheck(idle, stalled))
		case <-ctx.Done():
			return false, began, context.Cause(ctx)
		}
	}
}

// handle passes on one item of the provider's stream; done says the attempt
// is over.
func (s *streamer) handle(it item, ok bool, began *bool, yield func(Part, error) bool) (stopped, done bool, err error) {
	switch {
	case !ok:
		return false, true, fmt.Errorf("%w (%s ended its stream without message stop)", ErrIncomplete, s.p.Name())
	case it.err != nil:
		return false, true, it.err
	}
	*began = true
	if !yield(it.part, nil) {
		return true, true, nil
	}
	if it.part.Type == PartMessageStop {
		return false, true, nil
	}
	return false, false, nil
}

// nextCheck is when the watchdog must look again, idle having passed since
// the last byte and the stall having been reported or not.
func (s *streamer) nextCheck(idle time.Duration, stalled bool) time.Duration {
	next := time.Duration(-1)
	if s.o.StallWarning > 0 {
		if stalled {
			// A new stall can start only after the next byte.
			next = s.o.StallWarning
		} else {
			next = s.o.StallWarning - idle
		}
	}
	if s.o.IdleTimeout > 0 && (next < 0 || s.o.IdleTimeout-idle < next) {
		next = s.o.IdleTimeout - idle
	}
	return max(next, time.Millisecond)
}

// complete makes the non-streaming fallback request and yields its response
// as parts.
func (s *streamer) complete(ctx context.Context, yield func(Part, error) bool) (stopped bool, err error) {
	cctx, cancel := context.WithCancelCause(ctx)
	cctx = context.WithValue(cctx, watchKey{}, &watch{clock: s.o.Clock, max: s.o.MaxResponseSize})
	type result struct {
		resp *Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.p.Complete(cctx, s.req)
		done <- result{resp, err}
	}()
	var timeout <-chan time.Time
	if s.o.CompleteTimeout > 0 {
		t := s.o.Clock.NewTimer(s.o.CompleteTimeout)
		defer t.Stop()
		timeout = t.C()
	}
	var r result
	select {
	case r = <-done:
		cancel(errAttemptOver)
	case <-timeout:
		cancel(errAttemptOver)
		<-done
		return false, fmt.Errorf("%w: the non-streaming request took longer than %v", ErrIdleTimeout, s.o.CompleteTimeout)
	case <-ctx.Done():
		cancel(errAttemptOver)
		<-done
		return false, context.Cause(ctx)
	}
	if r.err != nil {
		return false, r.err
	}
	for part := range r.resp.Parts() {
		if !yield(part, nil) {
			return true, nil
		}
	}
	return false, nil
}

// watch is the time of the last sign of life of an attempt (its response's
// arrival, or a part yielded) and the bound of its body.
type watch struct {
	clock Clock
	last  atomic.Int64 // Unix nanoseconds
	max   int64        // bytes of the body, or < 0 for no bound
}

func (w *watch) touch() { w.last.Store(w.clock.Now().UnixNano()) }

type watchKey struct{}

// WatchBody wraps the body of a response (streamed, or the non-streaming
// fallback's) for the Stream call that ctx belongs to: the response's
// arrival is a sign of life for its watchdog, and reading past
// StreamOptions.MaxResponseSize fails with ErrResponseTooLarge. The bytes
// themselves are no sign of life: a server that sends only keep-alives
// must not hold the call forever, so the watchdog waits for parts. Outside
// Stream the default bound applies. Providers call it on every response
// body they read.
func WatchBody(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	w, _ := ctx.Value(watchKey{}).(*watch)
	limit := int64(DefaultMaxResponseSize)
	if w != nil {
		w.touch()
		limit = w.max
	}
	return &boundedBody{ReadCloser: body, left: limit, max: limit, w: w}
}

// ServerWorking tells the watchdog of the Stream call that body (as
// WatchBody returned it) belongs to that the server is busy on the
// response without sending content: a provider calls it for a keep-alive
// that comes while a server-side tool (a web fetch, code execution) runs,
// which can take longer than the idle timeout. Any other reader is left
// alone.
func ServerWorking(body io.Reader) {
	if b, ok := body.(*boundedBody); ok && b.w != nil {
		b.w.touch()
	}
}

// boundedBody fails once more than max bytes have been read (max < 0: no
// bound).
type boundedBody struct {
	io.ReadCloser
	left, max int64
	err       error
	w         *watch // the Stream call's, or nil
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.max < 0 {
		return b.ReadCloser.Read(p)
	}
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body of exactly max from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		return n, err
	}
	n, b.left = int(b.left), 0
	b.err = fmt.Errorf("%w of %s (SLUICE_MAX_RESPONSE_SIZE)", ErrResponseTooLarge, formatSize(b.max))
	return n, b.err
}

// formatSize writes n bytes in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
