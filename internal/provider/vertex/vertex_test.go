package vertex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/internal/provider/vertex/gcpauth"
	"github.com/sluicehq/sluice/internal/provider/vertex/gcpauth/gcpauthtest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	project     = "sluice-test-project"
	region      = "us-east5"
	accessToken = "ya29.test-access-token-secret"
)

var hi = &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}}

// adcFile writes a service account's Application Default Credentials file
// whose token_uri is tokenURL.
func adcFile(t *testing.T, tokenURL string) string {
	t.Helper()
	sa := gcpauthtest.ServiceAccount(tokenURL, false)
	sa["project_id"] = project
	b, _ := json.Marshal(sa)
	path := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fake is a local Vertex AI: it requires the token the token endpoint
// issued, records the requests and hands them to the test's handler.
type fake struct {
	t       *testing.T
	handler http.HandlerFunc
	mu      sync.Mutex
	seen    []seen
}

type seen struct {
	path string
	body []byte
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.seen = append(f.seen, seen{r.URL.EscapedPath(), body})
	f.mu.Unlock()
	if got := r.Header.Get("Authorization"); got != "Bearer "+accessToken {
		f.t.Errorf("authorization %q", got)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)
		return
	}
	f.handler(w, r)
}

func (f *fake) last() seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[len(f.seen)-1]
}

// server starts a fake Vertex AI and token endpoint, and a provider that
// finds its credentials in an ADC file.
func server(t *testing.T, h http.HandlerFunc) (*Provider, *fake, *gcpauthtest.TokenServer) {
	t.Helper()
	tokens := &gcpauthtest.TokenServer{T: t, Scope: gcpauth.Scope, Token: accessToken}
	ts := httptest.NewServer(tokens)
	t.Cleanup(ts.Close)
	f := &fake{t: t, handler: h}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p, err := New(Config{
		ProjectID: project, Region: region, BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(),
		CredentialsFile: adcFile(t, ts.URL+"/token"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, f, tokens
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "anthropic", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const miniStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

var ok = fakemodel.SSE(miniStream)

// The recorded streams give, through Vertex AI, the parts they give from
// the Messages API.
func TestFixtures(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../anthropic/testdata/*.sse")
	if len(files) < 10 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, name)
			var want []model.Part
			anthropic.DecodeStream(bytes.NewReader(raw), func(p model.Part, err error) bool {
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, p)
				return true
			})
			p, _, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, raw, true) })
			parts, err := pt.Attempt(t, p, hi)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(parts, want) {
				t.Fatalf("parts differ")
			}
		})
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ model, id string }{
		{"", "claude-sonnet-4-6"},
		{"claude-haiku-4-5", "claude-haiku-4-5@20251001"},
		{"claude-opus-4-1@20250805", "claude-opus-4-1@20250805"},
	} {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			p, f, tokens := server(t, ok)
			req := *hi
			req.Model, req.MaxTokens = tt.model, 50
			for range 2 {
				if _, err := pt.Attempt(t, p, &req); err != nil {
					t.Fatal(err)
				}
			}
			if n := tokens.Issued.Load(); n != 1 {
				t.Fatalf("%d tokens issued for two requests", n)
			}
			got := f.last()
			if want := "/v1/projects/" + project + "/locations/" + region + "/publishers/anthropic/models/" + tt.id + ":streamRawPredict"; got.path != want {
				t.Fatalf("path %s, want %s", got.path, want)
			}
			var body map[string]any
			json.Unmarshal(got.body, &body)
			want := map[string]any{
				"anthropic_version": "vertex-2023-10-16", "max_tokens": 50.0, "stream": true,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			}
			if !reflect.DeepEqual(body, want) {
				t.Fatalf("body %s", got.body)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	creds := adcFile(t, "http://127.0.0.1:1/token")
	for _, tt := range []struct{ region, base string }{
		{"global", "https://aiplatform.googleapis.com/v1"},
		{"europe-west1", "https://europe-west1-aiplatform.googleapis.com/v1"},
	} {
		p, err := New(Config{ProjectID: project, Region: tt.region, CredentialsFile: creds})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.url(p.modelName(hi), "streamRawPredict"); got != tt.base+"/projects/"+project+"/locations/"+tt.region+"/publishers/anthropic/models/claude-sonnet-4-6:streamRawPredict" {
			t.Errorf("%s: %s", tt.region, got)
		}
	}
	for _, c := range []Config{{Region: "global", CredentialsFile: creds}, {ProjectID: project, CredentialsFile: creds}} {
		if _, err := New(c); err == nil {
			t.Errorf("%v: no error", c)
		}
	}
}

// The Anthropic provider's fault cases, through Vertex AI: retried once,
// and the retried answer is whole.
func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	cut := func(before string) string { return miniStream[:strings.Index(miniStream, before)] }
	tests := []struct {
		name  string
		first http.HandlerFunc
		want  func(error) bool
	}{
		{"overloaded error event", fakemodel.SSE(cut("event: content_block_stop") + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), func(err error) bool {
			var e *model.APIError
			return errors.As(err, &e) && e.Type == "overloaded_error" && e.Provider == "vertex"
		}},
		{"no message_stop", fakemodel.SSE(cut("event: message_stop")), is(model.ErrIncomplete)},
		{"cut inside an event", fakemodel.SSE(miniStream[:strings.Index(miniStream, `"Hi"`)]), is(model.ErrIncomplete)},
		{"html page", fakemodel.Page("text/html", "<html><body>Sign in</body></html>"), is(model.ErrNotEventStream)},
		{"connection reset", fakemodel.ResetAfter(miniStream, strings.Index(miniStream, "event: content_block_delta")), func(error) bool { return true }},
		{"429 quota", fakemodel.JSON(http.StatusTooManyRequests, `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model","status":"RESOURCE_EXHAUSTED"}}`), func(err error) bool {
			var e *model.APIError
			return errors.As(err, &e) && e.Status == 429 && strings.Contains(e.Message, "Quota exceeded")
		}},
		{"503", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`)
		}, func(error) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(tt.first, ok)
			p, _, _ := server(t, h)
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			retries := pt.Retries(parts)
			if n.Load() != 2 || len(waits) != 1 || len(retries) != 1 || !tt.want(retries[0].Err) {
				t.Fatalf("%d requests, %d waits, retries %+v", n.Load(), len(waits), retries)
			}
			if strings.Contains(retries[0].Err.Error(), accessToken) {
				t.Fatal("token in the error")
			}
			if r := pt.Accumulate(t, parts); r.ID != "msg_1" || r.Content[0].Text != "Hi" {
				t.Fatalf("the retried answer shows %+v", r.Content)
			}
		})
	}
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func TestNotRetried(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status   int
		body     string
		overflow bool
	}{
		{403, `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, false},
		{404, `{"error":{"code":404,"message":"Publisher Model was not found","status":"NOT_FOUND"}}`, false},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, true},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}, ok)
			p, _, _ := server(t, h)
			_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			var e *model.APIError
			if !errors.As(err, &e) || e.Status != tt.status || e.Provider != "vertex" || n.Load() != 1 || errors.Is(err, model.ErrContextOverflow) != tt.overflow {
				t.Fatalf("err = %v after %d requests", err, n.Load())
			}
		})
	}
}

// A token endpoint that refuses the grant: no request is sent, nothing is
// retried, and the error carries no secret.
func TestTokenRefused(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	}))
	defer ts.Close()
	f := &fake{t: t, handler: ok}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p, err := New(Config{ProjectID: project, Region: region, BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), CredentialsFile: adcFile(t, ts.URL+"/token")})
	if err != nil {
		t.Fatal(err)
	}
	_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !errors.Is(err, model.ErrInvalidRequest) || !strings.Contains(err.Error(), "access token") || len(waits) != 0 {
		t.Fatalf("err = %v, %d waits", err, len(waits))
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("key in the error: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 0 {
		t.Fatalf("%d requests sent", len(f.seen))
	}
}

func TestStallAndIdleTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	silent := fakemodel.Stall(fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: content_block_start")]), release)
	h, n := fakemodel.Attempts(silent, ok)
	p, _, _ := server(t, h)
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{
		Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: time.Minute,
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	next, stop := iter.Pull2(model.Stream(t.Context(), p, hi, opts))
	defer stop()
	expect := func(want model.PartType) model.Part {
		t.Helper()
		part, err, more := next()
		if err != nil || !more || part.Type != want {
			t.Fatalf("got %v, %v, %v; want %v", part.Type, err, more, want)
		}
		return part
	}
	advance := func(d time.Duration) {
		go func() {
			clock.WaitArmed(1)
			clock.Advance(d)
		}()
	}
	expect(model.PartMessageStart)
	advance(10 * time.Second)
	expect(model.PartStalled)
	advance(50 * time.Second)
	if part := expect(model.PartRetry); !errors.Is(part.Retry.Err, model.ErrIdleTimeout) {
		t.Fatalf("cause %v", part.Retry.Err)
	}
	var parts []model.Part
	for {
		part, err, more := next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		parts = append(parts, part)
	}
	if r := pt.Accumulate(t, parts); n.Load() != 2 || r.Content[0].Text != "Hi" {
		t.Fatalf("%d requests, %+v", n.Load(), r)
	}
}

// After repeated streaming failures, rawPredict answers whole.
func TestFallbackToRawPredict(t *testing.T) {
	t.Parallel()
	var streamed, whole atomic.Int32
	p, _, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":streamRawPredict") {
			streamed.Add(1)
			fakemodel.ServeSSE(w, []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), false)
			return
		}
		whole.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_full","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Whole answer"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":9}}`)
	})
	parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := pt.Accumulate(t, parts); whole.Load() != 1 || r.Content[0].Text != "Whole answer" {
		t.Fatalf("%d streams, %d rawPredict, %+v", streamed.Load(), whole.Load(), r)
	}
}
