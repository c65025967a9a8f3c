package fakemodel

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Each fault answers as its doc says: the status, the headers, the bytes
// and where the body ends.
func TestFaults(t *testing.T) {
	t.Parallel()
	const body = "event: a\ndata: {}\n\n"
	release := make(chan struct{})
	h, n := Attempts(
		SSE(body),
		func(w http.ResponseWriter, r *http.Request) { ServeSSE(w, []byte(body), true) },
		Page("text/html", "<html>proxy</html>"),
		Page("", "<html>maintenance</html>"),
		JSON(429, `{"error":{}}`, "retry-after", "7", "request-id", "r1"),
		Stall(SSE(body[:5]), release),
		ResetAfter(body, 5),
	)
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func() (*http.Response, string, error) {
		t.Helper()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	for range 2 {
		if resp, b, err := get(); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || b != body {
			t.Fatalf("SSE: %d %q %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
		}
	}
	if resp, b, err := get(); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html" || b != "<html>proxy</html>" {
		t.Fatalf("Page: %d %q %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
	}
	if resp, b, err := get(); err != nil || resp.StatusCode != 200 || resp.Header.Values("Content-Type") != nil || b != "<html>maintenance</html>" {
		t.Fatalf("Page without a type: %d %q %q %v", resp.StatusCode, resp.Header.Values("Content-Type"), b, err)
	}
	if resp, b, err := get(); err != nil || resp.StatusCode != 429 || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("retry-after") != "7" || resp.Header.Get("request-id") != "r1" || b != `{"error":{}}` {
		t.Fatalf("JSON: %d %v %q %v", resp.StatusCode, resp.Header, b, err)
	}
	done := make(chan string)
	go func() {
		// Not get: t.Fatal belongs to the test's goroutine.
		resp, err := http.Get(srv.URL)
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	select {
	case b := <-done:
		t.Fatalf("Stall ended before its release: %q", b)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if b := <-done; b != body[:5] {
		t.Fatalf("Stall: %q", b)
	}
	if _, b, err := get(); err == nil || b != body[:5] {
		t.Fatalf("ResetAfter: %q, %v", b, err)
	}
	if resp, _, _ := get(); resp.StatusCode != http.StatusTeapot || n.Load() != 8 {
		t.Fatalf("past the last attempt: %d after %d requests", resp.StatusCode, n.Load())
	}
}

// A Recorder keeps each request's URL, header and body, and the handler it
// wraps still reads the body.
func TestRecorder(t *testing.T) {
	t.Parallel()
	var seen []string
	h, _ := Attempts(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, string(b))
		ServeSSE(w, nil, false)
	})
	rec := Record(h)
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for _, body := range []string{`{"n":1}`, `{"n":2}`} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/models/m:stream?alt=sse", strings.NewReader(body))
		req.Header.Set("x-api-key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := rec.Requests()
	if len(got) != 2 || len(seen) != 1 || seen[0] != `{"n":1}` {
		t.Fatalf("%d recorded, the handler read %q", len(got), seen)
	}
	for i, r := range got {
		if r.URL.Path != "/v1/models/m:stream" || r.URL.RawQuery != "alt=sse" || r.Header.Get("x-api-key") != "k" || string(r.Body) != fmt.Sprintf(`{"n":%d}`, i+1) {
			t.Fatalf("request %d: %s %v %s", i+1, r.URL, r.Header, r.Body)
		}
	}
}
