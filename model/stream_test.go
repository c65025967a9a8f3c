package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a Provider that plays one scripted function per attempt.
type fake struct {
	mu        sync.Mutex
	attempts  []func(ctx context.Context, yield func(model.Part, error) bool)
	calls     int
	complete  func(ctx context.Context) (*model.Response, error)
	completes int
	models    []string // each stream's request model, in order
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	f.mu.Lock()
	i := f.calls
	f.calls++
	f.models = append(f.models, req.Model)
	f.mu.Unlock()
	return func(yield func(model.Part, error) bool) {
		if i >= len(f.attempts) {
			yield(model.Part{}, fmt.Errorf("fake: unexpected attempt %d", i+1))
			return
		}
		f.attempts[i](ctx, yield)
	}
}

func (f *fake) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	f.mu.Lock()
	f.completes++
	f.mu.Unlock()
	if f.complete == nil {
		return nil, errors.New("fake: no complete")
	}
	return f.complete(ctx)
}

var answer = &model.Response{
	ID: "msg_ok", Model: "m", StopReason: model.StopEndTurn,
	Content: []model.Content{{Type: model.ContentText, Text: "hello"}},
}

// ok streams answer.
func ok(ctx context.Context, yield func(model.Part, error) bool) {
	for p := range answer.Parts() {
		if !yield(p, nil) {
			return
		}
	}
}

// fail streams a message start and a delta, then fails with err.
func fail(err error) func(context.Context, func(model.Part, error) bool) {
	return func(ctx context.Context, yield func(model.Part, error) bool) {
		if !yield(model.Part{Type: model.PartMessageStart, ID: "msg_bad"}, nil) {
			return
		}
		if !yield(model.Part{Type: model.PartBlockStart, Block: model.BlockText}, nil) {
			return
		}
		if !yield(model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: "partial"}, nil) {
			return
		}
		yield(model.Part{}, err)
	}
}

// refuse fails before any part, as a status error does.
func refuse(err error) func(context.Context, func(model.Part, error) bool) {
	return func(ctx context.Context, yield func(model.Part, error) bool) { yield(model.Part{}, err) }
}

// run collects what Stream yields, with backoff waits recorded instead of
// slept.
func run(t *testing.T, p model.Provider, opts model.StreamOptions) (parts []model.Part, delays []time.Duration, err error) {
	t.Helper()
	opts.Sleep = func(ctx context.Context, d time.Duration) error {
		delays = append(delays, d)
		return ctx.Err()
	}
	if opts.Jitter == nil {
		opts.Jitter = func() float64 { return 0 }
	}
	for p, e := range model.Stream(t.Context(), p, &model.Request{}, opts) {
		if e != nil {
			if err != nil {
				t.Fatalf("second error %v after %v", e, err)
			}
			err = e
			continue
		}
		if err != nil {
			t.Fatalf("part %v after the error", p.Type)
		}
		parts = append(parts, p)
	}
	return parts, delays, err
}

func final(t *testing.T, parts []model.Part) *model.Response {
	t.Helper()
	var acc model.Accumulator
	for _, p := range parts {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return acc.Response()
}

func retries(parts []model.Part) []*model.Retry {
	var out []*model.Retry
	for _, p := range parts {
		if p.Type == model.PartRetry {
			out = append(out, p.Retry)
		}
	}
	return out
}

func boolp(b bool) *bool { return &b }

func TestStreamRetries(t *testing.T) {
	t.Parallel()
	overloaded := &model.APIError{Provider: "fake", Type: "overloaded_error", Message: "Overloaded"}
	tests := []struct {
		name      string
		attempts  []func(context.Context, func(model.Part, error) bool)
		opts      model.StreamOptions
		wantErr   error // nil: the answer arrives
		wantWaits []time.Duration
	}{
		{"success", []func(context.Context, func(model.Part, error) bool){ok}, model.StreamOptions{}, nil, nil},
		{"error event then success", []func(context.Context, func(model.Part, error) bool){fail(overloaded), ok}, model.StreamOptions{}, nil, []time.Duration{500 * time.Millisecond}},
		{"backoff doubles and caps", []func(context.Context, func(model.Part, error) bool){
			refuse(&model.APIError{Status: 529}), refuse(&model.APIError{Status: 503}), refuse(&model.APIError{Status: 500}), refuse(&model.APIError{Status: 429}), ok},
			model.StreamOptions{MaxDelay: 3 * time.Second}, nil, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second}},
		{"retry-after honoured", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 429, RetryAfter: 7 * time.Second}), ok},
			model.StreamOptions{}, nil, []time.Duration{7 * time.Second}},
		{"retry-after capped", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 429, RetryAfter: time.Hour}), ok},
			model.StreamOptions{}, nil, []time.Duration{model.DefaultMaxRetryAfter}},
		{"401 not retried", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 401})}, model.StreamOptions{}, &model.APIError{}, nil},
		{"x-should-retry false", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 500, ShouldRetry: boolp(false)})}, model.StreamOptions{}, &model.APIError{}, nil},
		{"x-should-retry true", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 400, ShouldRetry: boolp(true)}), ok}, model.StreamOptions{}, nil, []time.Duration{500 * time.Millisecond}},
		{"context overflow not retried", []func(context.Context, func(model.Part, error) bool){refuse(fmt.Errorf("%w: %w", model.ErrContextOverflow, &model.APIError{Status: 400}))}, model.StreamOptions{}, model.ErrContextOverflow, nil},
		{"incomplete retried", []func(context.Context, func(model.Part, error) bool){fail(model.ErrIncomplete), ok}, model.StreamOptions{}, nil, []time.Duration{500 * time.Millisecond}},
		{"provider ends without stop", []func(context.Context, func(model.Part, error) bool){func(context.Context, func(model.Part, error) bool) {}, ok}, model.StreamOptions{}, nil, []time.Duration{500 * time.Millisecond}},
		{"network error retried", []func(context.Context, func(model.Part, error) bool){fail(io.ErrUnexpectedEOF), ok}, model.StreamOptions{}, nil, []time.Duration{500 * time.Millisecond}},
		{"retries exhausted, no fallback", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 500}), refuse(&model.APIError{Status: 500})},
			model.StreamOptions{MaxRetries: 1, FallbackAfter: -1}, &model.APIError{}, []time.Duration{500 * time.Millisecond}},
		{"no retries", []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 500})},
			model.StreamOptions{MaxRetries: -1, FallbackAfter: -1}, &model.APIError{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{attempts: tt.attempts}
			parts, waits, err := run(t, f, tt.opts)
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
				if got := final(t, parts); got.ID != answer.ID || got.Content[0].Text != "hello" {
					t.Fatalf("got %+v", got)
				}
			case *model.APIError:
				var apiErr *model.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("err = %v, want an API error", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if fmt.Sprint(waits) != fmt.Sprint(tt.wantWaits) {
				t.Fatalf("waits %v, want %v", waits, tt.wantWaits)
			}
			rs := retries(parts)
			if len(rs) != len(tt.wantWaits) {
				t.Fatalf("%d retry parts for %d waits", len(rs), len(tt.wantWaits))
			}
			for i, r := range rs {
				if r.Attempt != i+1 || r.Delay != tt.wantWaits[i] || r.Err == nil {
					t.Fatalf("retry %d = %+v", i, r)
				}
			}
			if f.calls != len(tt.attempts) {
				t.Fatalf("%d attempts, want %d", f.calls, len(tt.attempts))
			}
		})
	}
}

// PartRetry comes before the wait, so the consumer can discard the partial
// message while Stream waits.
func TestStreamRetryBeforeWait(t *testing.T) {
	t.Parallel()
	var log []string
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){fail(model.ErrIncomplete), ok}}
	opts := model.StreamOptions{
		Sleep: func(ctx context.Context, d time.Duration) error {
			log = append(log, "sleep")
			return nil
		},
		Jitter: func() float64 { return 0.999 },
	}
	for p, err := range model.Stream(t.Context(), f, &model.Request{}, opts) {
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, p.Type.String())
		if p.Type == model.PartRetry && p.Retry.Delay >= 500*time.Millisecond || p.Type == model.PartRetry && p.Retry.Delay < 375*time.Millisecond {
			t.Fatalf("delay %v out of the jitter range", p.Retry.Delay)
		}
	}
	want := "message_start block_start block_delta retry sleep message_start block_start block_delta block_stop message_delta message_stop"
	if got := strings.Join(log, " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Fallback models (--fallback-model) take over after FallbackModelAfter
// answers in a row that the model is unavailable, in order, each with
// retries of its own; other failures never switch.
func TestStreamFallbackModels(t *testing.T) {
	t.Parallel()
	busy := refuse(&model.APIError{Status: 529, Type: "overloaded_error"})
	down := refuse(&model.APIError{Status: 503})
	limited := refuse(&model.APIError{Status: 429})
	type attempts = []func(context.Context, func(model.Part, error) bool)
	tests := []struct {
		name       string
		attempts   attempts
		fallbacks  []string
		wantModels []string
		wantSwitch []string // the Model of each retry that switched
		wantErr    bool
	}{
		{"overloaded three times", attempts{busy, busy, busy, ok}, []string{"b"},
			[]string{"a", "a", "a", "b"}, []string{"b"}, false},
		{"5xx counts too", attempts{down, busy, down, ok}, []string{"b"},
			[]string{"a", "a", "a", "b"}, []string{"b"}, false},
		{"a rate limit breaks the run", attempts{busy, busy, limited, busy, busy, ok}, []string{"b"},
			[]string{"a", "a", "a", "a", "a", "a"}, nil, false},
		{"the next fallback after the first", attempts{busy, busy, busy, busy, busy, busy, ok}, []string{"b", "c"},
			[]string{"a", "a", "a", "b", "b", "b", "c"}, []string{"b", "c"}, false},
		{"no fallback model: retries as before", attempts{busy, busy, busy, ok}, nil,
			[]string{"a", "a", "a", "a"}, nil, false},
		{"fallbacks used up: gives up", attempts{busy, busy, busy, busy, busy, busy, busy}, []string{"b"},
			[]string{"a", "a", "a", "b", "b", "b", "b"}, []string{"b"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{attempts: tc.attempts}
			opts := model.StreamOptions{FallbackModels: tc.fallbacks, MaxRetries: 5, FallbackAfter: -1,
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
			if tc.wantErr {
				opts.MaxRetries = 3
			}
			var switched []string
			var err error
			for p, e := range model.Stream(t.Context(), f, &model.Request{Model: "a"}, opts) {
				if e != nil {
					err = e
				}
				if p.Type == model.PartRetry && p.Retry.Model != "" {
					switched = append(switched, p.Retry.Model)
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !slices.Equal(f.models, tc.wantModels) || !slices.Equal(switched, tc.wantSwitch) {
				t.Fatalf("models %v, switched to %v; want %v, %v", f.models, switched, tc.wantModels, tc.wantSwitch)
			}
		})
	}
}

func TestStreamFallback(t *testing.T) {
	t.Parallel()
	broken := fail(model.ErrIncomplete)
	t.Run("after repeated stream failures", func(t *testing.T) {
		t.Parallel()
		f := &fake{
			attempts: []func(context.Context, func(model.Part, error) bool){broken, broken, broken},
			complete: func(context.Context) (*model.Response, error) { return answer, nil },
		}
		parts, _, err := run(t, f, model.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs := retries(parts)
		if len(rs) != 3 || rs[0].Fallback || rs[1].Fallback || !rs[2].Fallback {
			t.Fatalf("retries %+v", rs)
		}
		if got := final(t, parts); got.Content[0].Text != "hello" || got.StopReason != model.StopEndTurn {
			t.Fatalf("got %+v", got)
		}
		if f.completes != 1 {
			t.Fatalf("%d non-streaming requests", f.completes)
		}
	})
	t.Run("before giving up", func(t *testing.T) {
		t.Parallel()
		f := &fake{
			attempts: []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 529}), refuse(&model.APIError{Status: 529})},
			complete: func(context.Context) (*model.Response, error) { return answer, nil },
		}
		parts, _, err := run(t, f, model.StreamOptions{MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rs := retries(parts); len(rs) != 2 || !rs[1].Fallback {
			t.Fatalf("retries %+v", rs)
		}
	})
	t.Run("fallback fails", func(t *testing.T) {
		t.Parallel()
		f := &fake{
			attempts: []func(context.Context, func(model.Part, error) bool){broken, broken, broken},
			complete: func(context.Context) (*model.Response, error) { return nil, &model.APIError{Status: 529} },
		}
		_, _, err := run(t, f, model.StreamOptions{})
		var apiErr *model.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 529 {
			t.Fatalf("err = %v", err)
		}
		if f.completes != 1 || f.calls != 3 {
			t.Fatalf("%d streams, %d non-streaming requests", f.calls, f.completes)
		}
	})
	t.Run("status errors do not count as stream failures", func(t *testing.T) {
		t.Parallel()
		s := refuse(&model.APIError{Status: 429})
		f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){broken, s, broken, s, broken, ok}}
		parts, _, err := run(t, f, model.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range retries(parts) {
			if r.Fallback {
				t.Fatal("fell back although the stream failures were not consecutive")
			}
		}
	})
}

// blocked yields a message start, then waits like a stalled network read
// until the attempt is cancelled.
func blocked(ctx context.Context, yield func(model.Part, error) bool) {
	if !yield(model.Part{Type: model.PartMessageStart, ID: "msg_stalled"}, nil) {
		return
	}
	<-ctx.Done()
	yield(model.Part{}, ctx.Err())
}

// The watchdog on the real clock, in a synctest bubble: time moves only
// when every goroutine of the stream waits, so the stall and the idle
// timeout fire at exactly their thresholds.
func TestStreamStallAndIdleTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){blocked, ok}}
		opts := model.StreamOptions{
			StallWarning: 10 * time.Second, IdleTimeout: 60 * time.Second,
			Sleep:  func(context.Context, time.Duration) error { return nil },
			Jitter: func() float64 { return 0 },
		}
		next, stop := iter.Pull2(model.Stream(t.Context(), f, &model.Request{}, opts))
		defer stop()
		expect := func(want model.PartType) model.Part {
			t.Helper()
			p, err, more := next()
			if err != nil || !more || p.Type != want {
				t.Fatalf("got %v, %v, %v; want %v", p.Type, err, more, want)
			}
			return p
		}
		start := time.Now()
		expect(model.PartMessageStart)
		if p := expect(model.PartStalled); p.Idle != 10*time.Second || time.Since(start) != 10*time.Second {
			t.Fatalf("stalled after %v, idle %v; want 10s", time.Since(start), p.Idle)
		}
		p := expect(model.PartRetry)
		if !errors.Is(p.Retry.Err, model.ErrIdleTimeout) {
			t.Fatalf("retry cause %v", p.Retry.Err)
		}
		if d := time.Since(start); d != 60*time.Second {
			t.Fatalf("retried after %v, want the 60s idle timeout", d)
		}
		for {
			p, err, more := next()
			if err != nil {
				t.Fatal(err)
			}
			if !more {
				break
			}
			if p.Type == model.PartStalled {
				t.Fatal("stalled again")
			}
		}
	})
}

// Bytes that make no part (keep-alives: pings, comments) do not keep the
// watchdog quiet: a server that only pings is stalled, then timed out and
// retried.
func TestStreamKeepAlivesAreNoProgress(t *testing.T) {
	t.Parallel()
	clock := modeltest.NewClock(time.Unix(0, 0))
	pr, pw := io.Pipe()
	read := make(chan struct{})
	pinging := func(ctx context.Context, yield func(model.Part, error) bool) {
		body := model.WatchBody(ctx, pr)
		defer body.Close()
		stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
		defer stop()
		if !yield(model.Part{Type: model.PartMessageStart}, nil) {
			return
		}
		buf := make([]byte, 64)
		for {
			if _, err := body.Read(buf); err != nil {
				yield(model.Part{}, err)
				return
			}
			read <- struct{}{} // the byte has gone through the watched body
		}
	}
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){pinging, ok}}
	opts := model.StreamOptions{Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: 20 * time.Second,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	parts := make(chan model.Part, 64)
	done := make(chan error, 1)
	go func() {
		defer close(parts)
		for p, err := range model.Stream(t.Context(), f, &model.Request{}, opts) {
			if err != nil {
				done <- err
				return
			}
			parts <- p
		}
		done <- nil
	}()
	expect := func(want model.PartType) model.Part {
		t.Helper()
		p := <-parts
		if p.Type != want {
			t.Fatalf("got %v, want %v", p.Type, want)
		}
		return p
	}
	ping := func() {
		t.Helper()
		if _, err := pw.Write([]byte(": ping\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n")); err != nil {
			t.Fatal(err)
		}
		<-read
	}
	expect(model.PartMessageStart)
	// A keep-alive every 8 s: at 16 s without content the call is
	// stalled, at 24 s it is retried.
	clock.WaitArmed(1)
	clock.Advance(8 * time.Second)
	ping()
	clock.WaitArmed(1)
	clock.Advance(8 * time.Second)
	if p := expect(model.PartStalled); p.Idle != 16*time.Second {
		t.Fatalf("idle %v", p.Idle)
	}
	ping()
	clock.WaitArmed(1)
	clock.Advance(8 * time.Second)
	if p := expect(model.PartRetry); !errors.Is(p.Retry.Err, model.ErrIdleTimeout) {
		t.Fatalf("retry cause %v", p.Retry.Err)
	}
	var got []model.Part
	for p := range parts {
		got = append(got, p)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := final(t, got); r.Content[0].Text != "hello" || f.calls != 2 {
		t.Fatalf("%d attempts, %+v", f.calls, r)
	}
}

// Keep-alives a provider marks as the server working (a server-side tool
// runs) keep the watchdog quiet however long they last.
func TestStreamServerWorking(t *testing.T) {
	t.Parallel()
	clock := modeltest.NewClock(time.Unix(0, 0))
	pr, pw := io.Pipe()
	read := make(chan struct{})
	working := func(ctx context.Context, yield func(model.Part, error) bool) {
		body := model.WatchBody(ctx, pr)
		defer body.Close()
		if !yield(model.Part{Type: model.PartMessageStart}, nil) {
			return
		}
		buf := make([]byte, 64)
		for {
			if _, err := body.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				yield(model.Part{}, err)
				return
			}
			model.ServerWorking(body)
			read <- struct{}{}
		}
		for p := range answer.Parts() {
			if p.Type != model.PartMessageStart && !yield(p, nil) {
				return
			}
		}
	}
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){working}}
	opts := model.StreamOptions{Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: 20 * time.Second}
	var got []model.PartType
	done := make(chan error, 1)
	go func() {
		for p, err := range model.Stream(t.Context(), f, &model.Request{}, opts) {
			if err != nil {
				done <- err
				return
			}
			got = append(got, p.Type)
		}
		done <- nil
	}()
	for range 10 { // a ping every 8 s for 80 s
		clock.WaitArmed(1)
		clock.Advance(8 * time.Second)
		if _, err := pw.Write([]byte("event: ping\n\n")); err != nil {
			t.Fatal(err)
		}
		<-read
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, typ := range got {
		if typ == model.PartStalled || typ == model.PartRetry {
			t.Fatalf("got %v while the server worked", got)
		}
	}
}

// A body past the maximum response size fails the call, clearly, and is
// not retried: the same request would get the same answer.
func TestStreamMaxResponseSize(t *testing.T) {
	t.Parallel()
	huge := func(ctx context.Context, yield func(model.Part, error) bool) {
		body := model.WatchBody(ctx, io.NopCloser(strings.NewReader(strings.Repeat("x", 1<<16))))
		defer body.Close()
		n, err := io.Copy(io.Discard, body)
		if n != 1<<12 {
			err = fmt.Errorf("read %d bytes before failing with %v", n, err)
		}
		yield(model.Part{}, err)
	}
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){huge, ok}}
	_, delays, err := run(t, f, model.StreamOptions{MaxResponseSize: 1 << 12})
	if !errors.Is(err, model.ErrResponseTooLarge) || len(delays) != 0 || f.calls != 1 {
		t.Fatalf("err %v after %d retries", err, len(delays))
	}
	if !strings.Contains(err.Error(), "4 KiB") || !strings.Contains(err.Error(), "SLUICE_MAX_RESPONSE_SIZE") {
		t.Fatalf("message %q", err)
	}
	// Exactly the bound is fine.
	exact := func(ctx context.Context, yield func(model.Part, error) bool) {
		body := model.WatchBody(ctx, io.NopCloser(strings.NewReader(strings.Repeat("x", 1<<12))))
		if _, err := io.Copy(io.Discard, body); err != nil {
			yield(model.Part{}, err)
			return
		}
		ok(ctx, yield)
	}
	f = &fake{attempts: []func(context.Context, func(model.Part, error) bool){exact}}
	if _, _, err := run(t, f, model.StreamOptions{MaxResponseSize: 1 << 12}); err != nil {
		t.Fatal(err)
	}
}

func TestStreamOptionsMaxResponseSizeFromEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  string
		want int64
		bad  bool
	}{{"1048576", 1 << 20, false}, {"128MiB", 128 << 20, false}, {"2 GiB", 2 << 30, false}, {"64KiB", 64 << 10, false},
		{"-1", 0, true}, {"0", 0, true}, {"lots", 0, true}, {"1.5GiB", 0, true}} {
		o, err := model.StreamOptionsFromEnv(model.StreamOptions{}, func(k string) string {
			if k == "SLUICE_MAX_RESPONSE_SIZE" {
				return c.env
			}
			return ""
		})
		if (err != nil) != c.bad || o.MaxResponseSize != c.want {
			t.Errorf("%q: %d, %v", c.env, o.MaxResponseSize, err)
		}
	}
}

// The fallback request's timeout on the real clock, in a synctest bubble.
func TestStreamCompleteTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fake{
			attempts: []func(context.Context, func(model.Part, error) bool){refuse(&model.APIError{Status: 500})},
			complete: func(ctx context.Context) (*model.Response, error) { <-ctx.Done(); return nil, ctx.Err() },
		}
		opts := model.StreamOptions{
			MaxRetries: -1, CompleteTimeout: time.Minute, StallWarning: -1, IdleTimeout: -1,
			Sleep: func(context.Context, time.Duration) error { return nil },
		}
		start := time.Now()
		var err error
		for _, e := range model.Stream(t.Context(), f, &model.Request{}, opts) {
			if e != nil {
				err = e
			}
		}
		if !errors.Is(err, model.ErrIdleTimeout) {
			t.Fatalf("err = %v", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("gave up after %v, want the 1m timeout", d)
		}
	})
}

// A consumer that stops early ends the attempt: the provider sees its
// context cancelled and its goroutine is gone when the loop returns
// (goleak checks the latter for every test).
func TestStreamEarlyBreak(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){func(ctx context.Context, yield func(model.Part, error) bool) {
		defer close(cancelled)
		for i := 0; ; i++ {
			if !yield(model.Part{Type: model.PartMessageStart}, nil) {
				return
			}
			if ctx.Err() != nil {
				return
			}
		}
	}}}
	n := 0
	for _, err := range model.Stream(t.Context(), f, &model.Request{}, model.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("the provider was still running after the loop returned")
	}
}

func TestStreamContextCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){blocked}}
	var err error
	for p, e := range model.Stream(ctx, f, &model.Request{}, model.StreamOptions{}) {
		if p.Type == model.PartMessageStart {
			cancel()
		}
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if f.calls != 1 {
		t.Fatalf("retried after cancellation: %d attempts", f.calls)
	}
}

func TestStreamOptionsFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := model.StreamOptionsFromEnv(model.StreamOptions{}, env(map[string]string{
		"SLUICE_STREAM_IDLE_TIMEOUT": "90s", "SLUICE_STREAM_STALL_WARNING": "0", "SLUICE_STREAM_MAX_RETRIES": "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.IdleTimeout != 90*time.Second || o.StallWarning >= 0 || o.MaxRetries != 3 {
		t.Fatalf("got %+v", o)
	}
	for _, bad := range []map[string]string{
		{"SLUICE_STREAM_IDLE_TIMEOUT": "60"},
		{"SLUICE_STREAM_IDLE_TIMEOUT": "-1s"},
		{"SLUICE_STREAM_MAX_RETRIES": "x"},
	} {
		if _, err := model.StreamOptionsFromEnv(model.StreamOptions{}, env(bad)); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// A decode error that recurs is the server's answer, not a transient
// failure: one retry, then the non-streaming request at once, then the
// error — never the whole retry budget.
func TestStreamMalformedRecurs(t *testing.T) {
	t.Parallel()
	bad := fail(fmt.Errorf("fake: %w: content_block_delta event: not JSON", model.ErrMalformedEvent))
	tests := []struct {
		name          string
		complete      func(context.Context) (*model.Response, error)
		fallbackAfter int
		wantErr       bool
		streams       int
		completes     int
	}{
		{"the fallback answers", func(context.Context) (*model.Response, error) { return answer, nil }, 0, false, 2, 1},
		{"the fallback fails too", func(context.Context) (*model.Response, error) {
			return nil, fmt.Errorf("fake: %w: reading the answer", model.ErrMalformedEvent)
		}, 0, true, 2, 1},
		{"no fallback", nil, -1, true, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){bad, bad, bad, bad}, complete: tt.complete}
			parts, delays, err := run(t, f, model.StreamOptions{FallbackAfter: tt.fallbackAfter})
			if (err != nil) != tt.wantErr || f.calls != tt.streams || f.completes != tt.completes {
				t.Fatalf("err %v after %d streams, %d non-streaming", err, f.calls, f.completes)
			}
			if err != nil && !errors.Is(err, model.ErrMalformedEvent) {
				t.Fatalf("err %v", err)
			}
			if len(delays) != 1 {
				t.Fatalf("waited %v: only the first retry backs off", delays)
			}
			if !tt.wantErr && final(t, parts).Content[0].Text != "hello" {
				t.Fatalf("%+v", final(t, parts))
			}
		})
	}
	// A malformed attempt between others starts the count again.
	f := &fake{attempts: []func(context.Context, func(model.Part, error) bool){bad, fail(model.ErrIncomplete), bad, ok}}
	if _, _, err := run(t, f, model.StreamOptions{FallbackAfter: 10}); err != nil || f.calls != 4 || f.completes != 0 {
		t.Fatalf("err %v after %d streams, %d non-streaming", err, f.calls, f.completes)
	}
}
