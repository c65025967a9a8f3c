package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Broken or hostile servers get a bounded, clear answer: never a hang,
// never unbounded memory, never success reported for a failure.

// A 200 whose body is a JSON error, whether it answers the stream or the
// non-streaming fallback, is the API error it describes.
func TestJSONErrorIn200(t *testing.T) {
	t.Parallel()
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded right now"}}`
	jsonError := func(body string) http.HandlerFunc { return fakemodel.JSON(http.StatusOK, body) }
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		var streams, completes atomic.Int32
		p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(readBody(r), `"stream":true`) {
				streams.Add(1)
				fakemodel.ServeSSE(w, []byte(miniStream[:strings.Index(miniStream, "event: content_block_stop")]+"event: error\ndata: "+overloaded+"\n\n"), false)
				return
			}
			completes.Add(1)
			jsonError(overloaded)(w, r)
		})
		parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
		var apiErr *model.APIError
		if !errors.As(err, &apiErr) || apiErr.Type != "overloaded_error" || apiErr.Message != "Overloaded right now" {
			t.Fatalf("err = %v", err)
		}
		if streams.Load() != 3 || completes.Load() != 1 {
			t.Fatalf("%d streams, %d non-streaming", streams.Load(), completes.Load())
		}
		if parts[len(parts)-1].Type == model.PartMessageStop {
			t.Fatal("the failure ended like a success")
		}
	})
	t.Run("stream, not retried when invalid", func(t *testing.T) {
		t.Parallel()
		h, n := fakemodel.Attempts(jsonError(`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`), ok)
		p, _ := server(t, h)
		_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
		var apiErr *model.APIError
		if !errors.As(err, &apiErr) || apiErr.Message != "max_tokens: too large" || n.Load() != 1 {
			t.Fatalf("err = %v after %d requests", err, n.Load())
		}
	})
	t.Run("stream, retried when overloaded", func(t *testing.T) {
		t.Parallel()
		h, n := fakemodel.Attempts(jsonError(overloaded), ok)
		p, _ := server(t, h)
		parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
		if err != nil || len(waits) != 1 || n.Load() != 2 {
			t.Fatalf("err = %v, %d waits", err, len(waits))
		}
		if r := pt.Accumulate(t, parts); r.Content[0].Text != "Hi" {
			t.Fatalf("%+v", r)
		}
	})
	for _, body := range []string{`{}`, `{"id":"msg_1"}`, `[]`, `"text"`} {
		t.Run("complete "+body, func(t *testing.T) {
			t.Parallel()
			p, _ := server(t, jsonError(body))
			_, err := p.Complete(t.Context(), hi)
			if !errors.Is(err, model.ErrMalformedEvent) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// pingServer answers with message_start, then a ping each time tick
// receives, until the request ends.
func pingServer(tick <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fakemodel.ServeSSE(w, []byte(miniStream[:strings.Index(miniStream, "event: content_block_start")]), false)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-tick:
				io.WriteString(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n: keep-alive\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
}

// Endless pings with no content end the attempt at the idle timeout, with
// the stalled notice first, and the call is retried.
func TestEndlessPingsTimeOut(t *testing.T) {
	t.Parallel()
	tick := make(chan struct{})
	h, n := fakemodel.Attempts(pingServer(tick), ok)
	p, _ := server(t, h)
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: time.Minute,
		Sleep: func(ctx context.Context, d time.Duration) error { return nil }}
	next, stop := iter.Pull2(model.Stream(t.Context(), p, hi, opts))
	defer stop()
	part := func() model.Part {
		t.Helper()
		part, err, more := next()
		if err != nil || !more {
			t.Fatalf("%v, %v", err, more)
		}
		return part
	}
	if p := part(); p.Type != model.PartMessageStart {
		t.Fatalf("got %v", p.Type)
	}
	// A ping every 15 s for a minute: stalled after the first quarter,
	// timed out at the minute.
	var got []model.PartType
	go func() {
		for range 4 {
			tick <- struct{}{}
			clock.WaitArmed(1)
			clock.Advance(15 * time.Second)
		}
	}()
	for {
		p := part()
		got = append(got, p.Type)
		if p.Type == model.PartRetry {
			if !errors.Is(p.Retry.Err, model.ErrIdleTimeout) {
				t.Fatalf("retry cause %v", p.Retry.Err)
			}
			break
		}
	}
	if got[0] != model.PartStalled || len(got) != 2 {
		t.Fatalf("parts %v", got)
	}
	var rest []model.Part
	for {
		p, err, more := next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		rest = append(rest, p)
	}
	if r := pt.Accumulate(t, rest); n.Load() != 2 || r.Content[0].Text != "Hi" {
		t.Fatalf("%d requests, %+v", n.Load(), r)
	}
}

// endless writes text deltas until the client goes away; it counts the
// bytes it managed to write.
func endless(written *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		head := miniStream[:strings.Index(miniStream, "event: content_block_delta")]
		fakemodel.ServeSSE(w, []byte(head), false)
		delta := []byte(fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", strings.Repeat("lorem ipsum ", 1000)))
		for r.Context().Err() == nil {
			n, err := w.Write(delta)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
}

// A stream that never ends fails at the maximum response size, once,
// saying so; so does a non-streaming answer larger than it.
func TestMaxResponseSize(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	h, n := fakemodel.Attempts(endless(&written), ok)
	p, _ := server(t, h)
	_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{MaxResponseSize: 1 << 20})
	if !errors.Is(err, model.ErrResponseTooLarge) || len(waits) != 0 || n.Load() != 1 {
		t.Fatalf("err = %v after %d retries", err, len(waits))
	}
	if !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("message %q", err)
	}

	// The stream is refused once (no retry left), so the fallback comes.
	p, _ = server(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(readBody(r), `"stream":true`) {
			w.WriteHeader(529)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"m","type":"message","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{}}`, strings.Repeat("x", 2<<20))
	})
	_, _, err = pt.StreamAll(t, p, hi, model.StreamOptions{MaxResponseSize: 1 << 20, MaxRetries: -1})
	if !errors.Is(err, model.ErrResponseTooLarge) {
		t.Fatalf("non-streaming: err = %v", err)
	}
}

// Credentials never follow a redirect off the configured host, and a
// redirect that would turn the POST into a GET fails instead.
func TestRedirects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		to     func(self, other string) string
		follow bool
	}{
		{"307 to another host", 307, func(_, other string) string { return other + "/v1/messages" }, false},
		{"308 to another host", 308, func(_, other string) string { return other + "/v1/messages" }, false},
		{"302 to another host", 302, func(_, other string) string { return other + "/v1/messages" }, false},
		{"301 on the same host", 301, func(self, _ string) string { return self + "/moved/v1/messages" }, false},
		{"302 on the same host", 302, func(self, _ string) string { return self + "/moved/v1/messages" }, false},
		{"303 on the same host", 303, func(self, _ string) string { return self + "/moved/v1/messages" }, false},
		{"307 on the same host", 307, func(self, _ string) string { return self + "/moved/v1/messages" }, true},
		{"308 on the same host", 308, func(self, _ string) string { return self + "/moved/v1/messages" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu     sync.Mutex
				leaked []string
			)
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				leaked = append(leaked, r.Method+" "+r.Header.Get("x-api-key")+r.Header.Get("Authorization"))
				mu.Unlock()
				ok(w, r)
			}))
			t.Cleanup(other.Close)
			var self string
			var moved atomic.Int32
			var movedBody atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/moved/") {
					moved.Add(1)
					movedBody.Store(r.Method + " " + r.Header.Get("x-api-key") + " " + readBody(r))
					ok(w, r)
					return
				}
				http.Redirect(w, r, tt.to(self, other.URL), tt.status)
			}))
			t.Cleanup(srv.Close)
			self = srv.URL
			p := New(Config{APIKey: "sk-test-secret", BaseURL: srv.URL})
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if tt.follow {
				if err != nil {
					t.Fatal(err)
				}
				got, _ := movedBody.Load().(string)
				if !strings.HasPrefix(got, "POST sk-test-secret {") || !strings.Contains(got, `"hi"`) {
					t.Fatalf("the redirected request was %q", got)
				}
				if r := pt.Accumulate(t, parts); r.Content[0].Text != "Hi" {
					t.Fatalf("%+v", r)
				}
				return
			}
			if !errors.Is(err, model.ErrRedirect) || len(waits) != 0 {
				t.Fatalf("err = %v after %d retries", err, len(waits))
			}
			if strings.Contains(err.Error(), "sk-test-secret") || !strings.Contains(err.Error(), "base URL") {
				t.Fatalf("message %q", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if moved.Load() != 0 || len(leaked) > 0 {
				t.Fatalf("the redirect was followed: %v %q", movedBody.Load(), leaked)
			}
		})
	}
}

// A stream that cannot be decoded on two attempts in a row is not retried
// again: the non-streaming request comes at once, and its answer is the
// response.
func TestMalformedStreamRecurs(t *testing.T) {
	t.Parallel()
	var streams, completes atomic.Int32
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(readBody(r), `"stream":true`) {
			streams.Add(1)
			// A shape this decoder does not read: a delta whose text is
			// not a string.
			fakemodel.ServeSSE(w, []byte(strings.Replace(miniStream, `"text":"Hi"}`, `"text":["Hi"]}`, 1)), false)
			return
		}
		completes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_full","type":"message","model":"m","content":[{"type":"text","text":"Whole"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if streams.Load() != 2 || completes.Load() != 1 || len(waits) != 1 {
		t.Fatalf("%d streams, %d non-streaming, %d waits", streams.Load(), completes.Load(), len(waits))
	}
	if r := pt.Accumulate(t, parts); r.Content[0].Text != "Whole" {
		t.Fatalf("%+v", r)
	}
}

// A non-streaming request answered with an event stream (that might only
// ping, forever) fails at once instead of holding the fallback.
func TestCompleteAnsweredWithEventStream(t *testing.T) {
	t.Parallel()
	p, _ := server(t, pingServer(make(chan struct{})))
	_, err := p.Complete(t.Context(), hi)
	if !errors.Is(err, model.ErrMalformedEvent) || !strings.Contains(err.Error(), "event stream") {
		t.Fatalf("err = %v", err)
	}
}

// Pings while a server-side tool runs are the server working: a long web
// fetch or code execution outlives the idle timeout without a retry.
func TestPingsDuringServerToolKeepItAlive(t *testing.T) {
	t.Parallel()
	tick, finish := make(chan struct{}), make(chan struct{})
	head := miniStream[:strings.Index(miniStream, "event: content_block_start")] +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"code_execution\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"code\\\": \\\"import time; time.sleep(300)\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	tail := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"code_execution_tool_result\",\"tool_use_id\":\"srvtoolu_1\",\"content\":{\"type\":\"code_execution_result\",\"stdout\":\"\",\"stderr\":\"\",\"return_code\":0,\"content\":[]}}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		strings.ReplaceAll(miniStream[strings.Index(miniStream, "event: content_block_start"):strings.Index(miniStream, "event: message_delta")], `"index":0`, `"index":2`) +
		miniStream[strings.Index(miniStream, "event: message_delta"):]
	h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
		fakemodel.ServeSSE(w, []byte(head), false)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-tick:
				io.WriteString(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
				w.(http.Flusher).Flush()
			case <-finish:
				io.WriteString(w, tail)
				return
			case <-r.Context().Done():
				return
			}
		}
	}, ok)
	_, srv := server(t, h)
	// The client's reads are reported, so that the clock moves only once
	// the decoder has the ping.
	reads := make(chan string, 1024)
	client := srv.Client()
	client.Transport = pt.NotifyTransport{RT: client.Transport, Reads: reads}
	p := New(Config{APIKey: "sk-test-secret", BaseURL: srv.URL, HTTPClient: client})
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{Clock: clock, StallWarning: -1, IdleTimeout: time.Minute}
	go func() {
		// Five minutes of pings, one each 20 s. The decoder reads a ping
		// only once it has handled the one before, so when the clock moves
		// the last sign of life is at most two steps old: 40 s, less than
		// the idle timeout (with 30 s steps it could be 60 s, and the test
		// failed now and then on a loaded machine).
		for range 15 {
			tick <- struct{}{}
			for !strings.Contains(<-reads, "event: ping") {
			}
			clock.WaitArmed(1)
			clock.Advance(20 * time.Second)
		}
		close(finish)
	}()
	parts, waits, err := pt.StreamAll(t, p, hi, opts)
	if err != nil || len(waits) > 0 || n.Load() != 1 {
		for _, r := range pt.Retries(parts) {
			t.Logf("retry: %v", r.Err)
		}
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	if r := pt.Accumulate(t, parts); len(r.Content) != 3 || r.Content[2].Text != "Hi" {
		t.Fatalf("%+v", r.Content)
	}
}
