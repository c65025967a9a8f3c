package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/model"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"retry-after-ms": "1500"}, 1500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "12.5"}, 12500 * time.Microsecond},
		{map[string]string{"retry-after-ms": "250", "retry-after": "9"}, 250 * time.Millisecond},
		{map[string]string{"retry-after-ms": "junk", "retry-after": "9"}, 9 * time.Second},
		{map[string]string{"retry-after": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"retry-after": "-3"}, 0},
		{map[string]string{"retry-after": now.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second},
		{map[string]string{"retry-after": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"retry-after": "tomorrow"}, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestParseError(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, typ, message string }{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{`{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, "invalid_request_error", "bad key"},
		{`{"error":{"message":"too long","code":"context_length_exceeded"}}`, "context_length_exceeded", "too long"},
		{`{"error":"model not found"}`, "", "model not found"},
		{`{"object":"error","message":"max context","type":"BadRequestError","code":400}`, "BadRequestError", "max context"},
		{`{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."},
		{`{"error":{"code":500,"message":"internal","status":500}}`, "", "internal"},
		{"<html>\n  <body>502   Bad Gateway</body>\n</html>", "", "<html> <body>502 Bad Gateway</body> </html>"},
		{"", "", ""},
	}
	for _, tt := range tests {
		typ, msg := ParseError([]byte(tt.body))
		if typ != tt.typ || msg != tt.message {
			t.Errorf("%s: %q %q, want %q %q", tt.body, typ, msg, tt.typ, tt.message)
		}
	}
	if s := Snippet([]byte(strings.Repeat("é", 300))); len([]rune(s)) != 201 {
		t.Fatalf("snippet of %d runes", len([]rune(s)))
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	c := &Client{Provider: "p", Overflow: func(e *model.APIError) bool { return strings.Contains(e.Message, "too long") }}
	resp := func(status int, h map[string]string, body string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	err := c.Error(resp(529, map[string]string{"x-request-id": "r1", "x-should-retry": "false", "retry-after": "3"}, `{"error":{"type":"overloaded_error","message":"busy"}}`))
	var e *model.APIError
	if !errors.As(err, &e) || e.Status != 529 || e.RequestID != "r1" || e.ShouldRetry == nil || *e.ShouldRetry || e.RetryAfter != 3*time.Second || e.Retryable() {
		t.Fatalf("%+v", e)
	}
	if err := c.Error(resp(400, nil, `{"error":{"message":"prompt too long"}}`)); !errors.Is(err, model.ErrContextOverflow) {
		t.Fatalf("err = %v", err)
	}
	if err := c.Error(resp(502, nil, "")); !strings.Contains(err.Error(), "Bad Gateway") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckEventStream(t *testing.T) {
	t.Parallel()
	for ct, bad := range map[string]bool{"text/event-stream": false, "text/event-stream; charset=utf-8": false, "": false, "text/plain": false, "text/html; charset=utf-8": true, "application/json": true} {
		r := &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader("<h1>Login</h1>"))}
		err := CheckEventStream("p", r)
		if (err != nil) != bad || bad && !errors.Is(err, model.ErrNotEventStream) {
			t.Errorf("%q: %v", ct, err)
		}
	}
}

// ErrorDocument never fails on bad input, and what it finds says
// something.
func FuzzErrorDocument(f *testing.F) {
	for _, seed := range []string{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":{"message":"m","type":"t","code":"c"}}`, `{"error":"text"}`,
		`{"object":"error","message":"m","type":"t","code":404}`, `{"error":null}`, `{"type":"error"}`, `{}`, `[1]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if e := ErrorDocument("p", body); e != nil && e.Type == "" && e.Message == "" {
			t.Fatalf("an error document with neither type nor message from %q", body)
		}
	})
}
