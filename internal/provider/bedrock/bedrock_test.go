package bedrock

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey    = "AKIDTESTEXAMPLE"
	testSecret = "wJalrXUtnFEMI-test-secret-do-not-print"
	testToken  = "session-token-test-secret"
	testRegion = "us-west-2"
)

var hi = &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}}

// sseEvents reads the data of each event of a recorded Messages API stream.
func sseEvents(t testing.TB, raw []byte) [][]byte {
	t.Helper()
	d := sse.NewDecoder(bytes.NewReader(raw), 0)
	var out [][]byte
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return out
		}
		if err != nil && !errors.Is(err, sse.ErrTruncated) { // recordings may lack the last empty line
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(ev.Data))
	}
}

// stream is the event stream Bedrock sends for a recorded SSE stream.
func stream(t testing.TB, sseRaw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, ev := range sseEvents(t, sseRaw) {
		b.Write(fakemodel.BedrockChunk(ev))
	}
	return b.Bytes()
}

const miniSSE = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\",\"amazon-bedrock-invocationMetrics\":{\"inputTokenCount\":3,\"outputTokenCount\":2,\"invocationLatency\":512,\"firstByteLatency\":300}}\n\n"

// fake is a local Bedrock: it checks each request's SigV4 signature against
// the credentials it knows, then hands it to the test's handler.
type fake struct {
	t       *testing.T
	secrets map[string]string // access key → secret key
	handler http.HandlerFunc

	mu       sync.Mutex
	requests []seen
}

type seen struct {
	path   string
	header http.Header
	body   []byte
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.requests = append(f.requests, seen{r.URL.EscapedPath(), r.Header.Clone(), body})
	f.mu.Unlock()
	if err := verifySigV4(r, body, f.secrets); err != nil {
		f.t.Errorf("signature: %v", err)
		w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
		return
	}
	f.handler(w, r)
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fake) last() seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

// verifySigV4 checks r's Authorization header by the SigV4 specification,
// computed here from what the server received (not with the signer under
// test): the credential scope, the signed headers' values, the body's hash
// and the signature.
func verifySigV4(r *http.Request, body []byte, secrets map[string]string) error {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q", r.Header.Get("Authorization"))
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	amzDate := r.Header.Get("X-Amz-Date")
	if len(scope) != 5 || len(amzDate) != 16 || scope[1] != amzDate[:8] || scope[2] != testRegion || scope[3] != "bedrock" || scope[4] != "aws4_request" {
		return fmt.Errorf("credential %q at %q", fields["Credential"], amzDate)
	}
	secret, ok := secrets[scope[0]]
	if !ok {
		return fmt.Errorf("unknown access key %q", scope[0])
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var canon strings.Builder
	for _, h := range []string{"host", "x-amz-date", "content-type"} {
		if !strings.Contains(";"+fields["SignedHeaders"]+";", ";"+h+";") {
			return fmt.Errorf("%s is not signed: %s", h, fields["SignedHeaders"])
		}
	}
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		canon.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	var uri []string
	for _, seg := range strings.Split(r.URL.EscapedPath(), "/") {
		uri = append(uri, awsEscape(seg)) // every service but S3 encodes the path twice
	}
	sum := sha256.Sum256(body)
	creq := strings.Join([]string{r.Method, strings.Join(uri, "/"), r.URL.RawQuery, canon.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	csum := sha256.Sum256([]byte(creq))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(csum[:])
	mac := func(key []byte, s string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(s))
		return h.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), scope[1])
	k = mac(k, scope[2])
	k = mac(k, scope[3])
	k = mac(k, scope[4])
	if want := hex.EncodeToString(mac(k, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return fmt.Errorf("signature %s, want %s for\n%s", fields["Signature"], want, creq)
	}
	return nil
}

// awsEscape is SigV4's URI encoding: everything but A-Z a-z 0-9 - _ . ~
// as %XX.
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// server starts a fake Bedrock whose handler is h, and a provider for it
// with static credentials.
func server(t *testing.T, h http.HandlerFunc) (*Provider, *fake) {
	t.Helper()
	f := &fake{t: t, secrets: map[string]string{testKey: testSecret}, handler: h}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p, err := New(t.Context(), Config{
		Region: testRegion, BaseURL: srv.URL, HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider(testKey, testSecret, testToken),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, f
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "anthropic", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sseParts is what the anthropic provider's decoder makes of a recorded
// stream: the oracle for the same events carried in Bedrock's frames.
func sseParts(t testing.TB, raw []byte) []model.Part {
	t.Helper()
	var parts []model.Part
	anthropic.DecodeStream(bytes.NewReader(raw), func(p model.Part, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
		return true
	})
	return parts
}

// Every recorded Messages API stream, carried in Bedrock's frames, gives
// the parts it gives over SSE, whole or one byte per read.
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
			want := sseParts(t, raw)
			body := stream(t, raw)
			for _, oneByte := range []bool{false, true} {
				p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeBedrock(w, body, oneByte) })
				parts, err := pt.Attempt(t, p, hi)
				if err != nil {
					t.Fatalf("one byte %v: %v", oneByte, err)
				}
				if !reflect.DeepEqual(parts, want) {
					t.Fatalf("one byte %v: parts differ:\n%+v\nwant\n%+v", oneByte, parts, want)
				}
			}
		})
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		model, path string
	}{
		{"", "/model/us.anthropic.claude-sonnet-4-6/invoke-with-response-stream"},
		{"claude-haiku-4-5", "/model/us.anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream"},
		{"arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/abc123", "/model/arn:aws:bedrock:us-west-2:123456789012:application-inference-profile%2Fabc123/invoke-with-response-stream"},
	} {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			p, f := server(t, func(w http.ResponseWriter, r *http.Request) {
				fakemodel.ServeBedrock(w, stream(t, []byte(miniSSE)), false)
			})
			req := *hi
			req.Model, req.System, req.MaxTokens = tt.model, "be brief", 100
			if _, err := pt.Attempt(t, p, &req); err != nil {
				t.Fatal(err)
			}
			got := f.last()
			if got.path != tt.path {
				t.Fatalf("path %s, want %s", got.path, tt.path)
			}
			if got.header.Get("X-Amz-Security-Token") != testToken || got.header.Get("Content-Type") != "application/json" || got.header.Get("X-Amzn-Bedrock-Accept") != "application/json" {
				t.Fatalf("headers %v", got.header)
			}
			var body map[string]any
			if err := json.Unmarshal(got.body, &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100.0, "system": "be brief",
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			}
			if !reflect.DeepEqual(body, want) {
				t.Fatalf("body %s", got.body)
			}
		})
	}
}

func ok(t *testing.T) http.HandlerFunc {
	body := stream(t, []byte(miniSSE))
	return func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeBedrock(w, body, false) }
}

// prefix is the frames of miniSSE up to (not including) the event whose
// JSON starts with the given type.
func prefix(t *testing.T, before string) []byte {
	var b bytes.Buffer
	for _, ev := range sseEvents(t, []byte(miniSSE)) {
		if bytes.Contains(ev, []byte(`"type":"`+before+`"`)) {
			break
		}
		b.Write(fakemodel.BedrockChunk(ev))
	}
	return b.Bytes()
}

// The Anthropic provider's fault cases, in Bedrock's wire: each failure is
// retried once, and the retried answer is whole.
func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	withFrames := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeBedrock(w, b, false) }
	}
	tests := []struct {
		name  string
		first func(t *testing.T) http.HandlerFunc
		want  func(error) bool
	}{
		{"throttlingException mid-stream", func(t *testing.T) http.HandlerFunc {
			return withFrames(append(prefix(t, "content_block_stop"), fakemodel.BedrockException("throttlingException", "Too many tokens, please wait before trying again.")...))
		}, isType("throttlingException")},
		{"modelStreamErrorException", func(t *testing.T) http.HandlerFunc {
			return withFrames(append(prefix(t, "content_block_delta"), fakemodel.BedrockException("modelStreamErrorException", "The model stream failed")...))
		}, isType("modelStreamErrorException")},
		{"internalServerException", func(t *testing.T) http.HandlerFunc {
			return withFrames(append(prefix(t, "message_delta"), fakemodel.BedrockException("internalServerException", "internal error")...))
		}, isType("internalServerException")},
		{"serviceUnavailableException", func(t *testing.T) http.HandlerFunc {
			return withFrames(fakemodel.BedrockException("serviceUnavailableException", "Bedrock is unable to process your request."))
		}, isType("serviceUnavailableException")},
		{"overloaded error event in a chunk", func(t *testing.T) http.HandlerFunc {
			return withFrames(append(prefix(t, "content_block_stop"), fakemodel.BedrockChunk([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))...))
		}, isType("overloaded_error")},
		{"no message_stop", func(t *testing.T) http.HandlerFunc { return withFrames(prefix(t, "message_stop")) }, is(model.ErrIncomplete)},
		{"cut inside a frame", func(t *testing.T) http.HandlerFunc {
			b := prefix(t, "content_block_stop")
			return withFrames(b[:len(b)-7])
		}, is(model.ErrIncomplete)},
		{"corrupt frame", func(t *testing.T) http.HandlerFunc {
			b := prefix(t, "message_stop")
			b[len(b)-20] ^= 0xff
			return withFrames(b)
		}, is(model.ErrMalformedEvent)},
		{"chunk that is not base64", func(t *testing.T) http.HandlerFunc {
			return withFrames(append(prefix(t, "content_block_stop"), fakemodel.BedrockFrame([]byte(`{"bytes":"!!not base64"}`), ":message-type", "event", ":event-type", "chunk")...))
		}, is(model.ErrMalformedEvent)},
		{"html page", func(t *testing.T) http.HandlerFunc {
			return fakemodel.Page("text/html", "<html><body>Sign in to the proxy</body></html>")
		}, is(model.ErrNotEventStream)},
		{"no frame, no content type", func(t *testing.T) http.HandlerFunc {
			return fakemodel.Page("", "maintenance\n")
		}, is(model.ErrNotEventStream)},
		{"empty 200", func(t *testing.T) http.HandlerFunc { return withFrames(nil) }, is(model.ErrNotEventStream)},
		{"text whose start reads as a huge frame", func(t *testing.T) http.HandlerFunc {
			return fakemodel.Page("", "\x7f\x00\x00\x00\x00\x00\x00\x10 upstream timed out\n")
		}, is(model.ErrNotEventStream)},
		{"connection reset mid-stream", func(t *testing.T) http.HandlerFunc {
			return fakemodel.ResetAfter(string(prefix(t, "message_stop")), len(prefix(t, "content_block_delta"))+5)
		}, func(error) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(tt.first(t), ok(t))
			p, _ := server(t, h)
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Load() != 2 || len(waits) != 1 {
				t.Fatalf("%d requests, %d waits", n.Load(), len(waits))
			}
			retries := pt.Retries(parts)
			if len(retries) != 1 || !tt.want(retries[0].Err) {
				t.Fatalf("retries %+v", retries)
			}
			if strings.Contains(retries[0].Err.Error(), testSecret) {
				t.Fatal("secret in the error")
			}
			if r := pt.Accumulate(t, parts); r.ID != "msg_1" || len(r.Content) != 1 || r.Content[0].Text != "Hi" {
				t.Fatalf("the retried answer shows %+v", r.Content)
			}
		})
	}
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func isType(typ string) func(error) bool {
	return func(err error) bool {
		var e *model.APIError
		return errors.As(err, &e) && e.Type == typ && e.Provider == "bedrock" && e.Status == 0
	}
}

// Bedrock's HTTP error answers: the exception's name from x-amzn-ErrorType,
// retried or not by status and name, the request id kept.
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		exception string
		body      string
		retried   bool
		overflow  bool
	}{
		{429, "ThrottlingException", `{"message":"Too many requests, please wait before trying again."}`, true, false},
		{503, "ServiceUnavailableException", `{"message":"Bedrock is unable to process your request."}`, true, false},
		{500, "InternalServerException", `{"message":"internal"}`, true, false},
		{424, "ModelStreamErrorException", `{"message":"stream failed","originalStatusCode":500}`, true, false},
		{408, "ModelTimeoutException", `{"message":"timed out"}`, true, false},
		{400, "ValidationException", `{"message":"messages: field required"}`, false, false},
		{400, "ValidationException", `{"message":"Input is too long for requested model."}`, false, true},
		{400, "ValidationException", `{"message":"prompt is too long: 208310 tokens > 200000 maximum"}`, false, true},
		{403, "AccessDeniedException", `{"message":"You don't have access to the model with the specified model ID."}`, false, false},
		{404, "ResourceNotFoundException", `{"message":"Could not resolve the foundation model"}`, false, false},
		{424, "ModelErrorException", `{"message":"model error"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.exception), func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-ErrorType", tt.exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
				w.Header().Set("X-Amzn-RequestId", "b3c1e2f4-req")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}, ok(t))
			p, _ := server(t, h)
			_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if tt.retried {
				if err != nil || n.Load() != 2 || len(waits) != 1 {
					t.Fatalf("err %v after %d requests", err, n.Load())
				}
				return
			}
			var e *model.APIError
			if !errors.As(err, &e) || e.Status != tt.status || e.Type != tt.exception || e.RequestID != "b3c1e2f4-req" || n.Load() != 1 {
				t.Fatalf("err = %v after %d requests", err, n.Load())
			}
			if errors.Is(err, model.ErrContextOverflow) != tt.overflow {
				t.Fatalf("overflow %v: %v", !tt.overflow, err)
			}
		})
	}
}

// An exception that says the request is wrong ends the stream, unretried.
func TestValidationExceptionInStream(t *testing.T) {
	t.Parallel()
	h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
		fakemodel.ServeBedrock(w, fakemodel.BedrockException("validationException", "max_tokens: too large"), false)
	}, ok(t))
	p, _ := server(t, h)
	_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !isType("validationException")(err) || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests", err, n.Load())
	}
}

func TestFrameTooLarge(t *testing.T) {
	t.Parallel()
	f := &fake{t: t, secrets: map[string]string{testKey: testSecret}}
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		fakemodel.ServeBedrock(w, append(prefix(t, "content_block_stop"), fakemodel.BedrockChunk(bytes.Repeat([]byte("x"), 4<<10))...), false)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p, err := New(t.Context(), Config{Region: testRegion, BaseURL: srv.URL, MaxFrameSize: 1 << 10,
		Credentials: credentials.NewStaticCredentialsProvider(testKey, testSecret, "")})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !errors.Is(err, model.ErrEventTooLarge) || f.count() != 1 {
		t.Fatalf("err = %v after %d requests", err, f.count())
	}
}

// The watchdog aborts an attempt whose server has gone silent and retries.
func TestStallAndIdleTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	head := prefix(t, "content_block_start")
	silent := fakemodel.Stall(func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeBedrock(w, head, false) }, release)
	h, n := fakemodel.Attempts(silent, ok(t))
	p, _ := server(t, h)
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

// After repeated streaming failures, InvokeModel answers whole.
func TestFallbackToInvoke(t *testing.T) {
	t.Parallel()
	var streamed, invoked int
	var mu sync.Mutex
	broken := fakemodel.BedrockException("throttlingException", "slow down")
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream") {
			streamed++
			fakemodel.ServeBedrock(w, broken, false)
			return
		}
		invoked++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_full","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Whole answer"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":9}}`)
	})
	parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := pt.Accumulate(t, parts); streamed != 3 || invoked != 1 || r.ID != "msg_full" || r.Content[0].Text != "Whole answer" {
		t.Fatalf("%d streams, %d invokes, %+v", streamed, invoked, r)
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		fakemodel.ServeBedrock(w, stream(t, []byte(miniSSE)), false)
	}))
	defer srv.Close()
	p, err := New(t.Context(), Config{Region: testRegion, BaseURL: srv.URL, BearerToken: "bedrock-api-key-secret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.Attempt(t, p, hi); err != nil || auth != "Bearer bedrock-api-key-secret" {
		t.Fatalf("err %v, authorization %q", err, auth)
	}
	for _, s := range []string{fmt.Sprint(p.cfg), fmt.Sprintf("%#v", p.cfg), fmt.Sprintf("%+v", p.cfg)} {
		if strings.Contains(s, "secret") {
			t.Fatalf("token printed: %s", s)
		}
	}
}

// A gateway that signs for its clients gets the request unsigned.
func TestSkipAuth(t *testing.T) {
	t.Parallel()
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		fakemodel.ServeBedrock(w, stream(t, []byte(miniSSE)), false)
	}))
	defer srv.Close()
	p, err := New(t.Context(), Config{Region: testRegion, BaseURL: srv.URL, SkipAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.Attempt(t, p, hi); err != nil || len(auth) != 0 {
		t.Fatalf("err %v, authorization %q", err, auth)
	}
}

// The standard chain, end to end: credentials from a local container
// credentials endpoint (as ECS and EKS serve them), which must see its
// authorization token, sign the request the fake Bedrock checks. The
// chain reads the process environment, so this test is not parallel.
func TestContainerCredentials(t *testing.T) {
	var credsAuth string
	creds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		credsAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"AccessKeyId":"ASIACONTAINER","SecretAccessKey":"container-secret-key","Token":"container-session","Expiration":%q}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer creds.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": creds.URL + "/v2/credentials",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN":  "container-auth-token",
		"AWS_REGION":                         testRegion,
		"AWS_CONFIG_FILE":                    filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE":        filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":          "true",
		"AWS_ACCESS_KEY_ID":                  "",
		"AWS_SECRET_ACCESS_KEY":              "",
		"AWS_PROFILE":                        "",
	} {
		t.Setenv(k, v)
	}
	f := &fake{t: t, secrets: map[string]string{"ASIACONTAINER": "container-secret-key"}, handler: ok(t)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p, err := New(t.Context(), Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if p.Region() != testRegion {
		t.Fatalf("region %q", p.Region())
	}
	if _, err := pt.Attempt(t, p, hi); err != nil {
		t.Fatal(err)
	}
	if credsAuth != "container-auth-token" || f.last().header.Get("X-Amz-Security-Token") != "container-session" {
		t.Fatalf("credentials endpoint saw %q; token %q", credsAuth, f.last().header.Get("X-Amz-Security-Token"))
	}
	http.DefaultClient.CloseIdleConnections()
}

// Without any credentials the request is not sent, nor retried, and the
// error says where credentials come from.
func TestNoCredentials(t *testing.T) {
	t.Parallel()
	f := &fake{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	failing := credentialsFunc(func(context.Context) error { return errors.New("no EC2 IMDS role found") })
	p, err := New(t.Context(), Config{Region: testRegion, BaseURL: srv.URL, Credentials: failing})
	if err != nil {
		t.Fatal(err)
	}
	_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !errors.Is(err, model.ErrInvalidRequest) || !strings.Contains(err.Error(), "AWS credentials") || len(waits) != 0 || f.count() != 0 {
		t.Fatalf("err = %v, %d waits, %d requests", err, len(waits), f.count())
	}
}

func TestModelID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, region, want string }{
		{"claude-sonnet-4-6", "us-east-1", "us.anthropic.claude-sonnet-4-6"},
		{"claude-opus-4-5", "eu-central-1", "eu.anthropic.claude-opus-4-5-20251101-v1:0"},
		{"claude-haiku-4-5", "ap-northeast-1", "apac.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"claude-sonnet-4-5", "us-gov-west-1", "us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-6", "sa-east-1", "global.anthropic.claude-sonnet-4-6"},
		{"global.anthropic.claude-opus-4-6-v1", "us-east-1", "global.anthropic.claude-opus-4-6-v1"},
		{"anthropic.claude-3-haiku-20240307-v1:0", "us-east-1", "anthropic.claude-3-haiku-20240307-v1:0"},
	} {
		if got := ModelID(tt.name, tt.region); got != tt.want {
			t.Errorf("ModelID(%q, %q) = %q, want %q", tt.name, tt.region, got, tt.want)
		}
	}
}

type credentialsFunc func(context.Context) error

func (f credentialsFunc) Retrieve(ctx context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, f(ctx)
}

func FuzzDecode(f *testing.F) {
	f.Add(stream(f, []byte(miniSSE)))
	f.Add(fakemodel.BedrockException("throttlingException", "slow"))
	f.Add(append(fakemodel.BedrockChunk([]byte(`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"x"}}`)), fakemodel.BedrockFrame(nil, ":message-type", "error", ":error-code", "x")...))
	f.Add(stream(f, fixture(f, "tool_use_response.sse")))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		var acc model.Accumulator
		decode(bytes.NewReader(data), 1<<12, func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			if n > 2*len(data)+1 {
				t.Fatalf("%d parts from %d bytes", n, len(data))
			}
			if err == nil {
				_ = acc.Add(p)
			}
			return true
		})
		if _, err := json.Marshal(acc.Response()); err != nil {
			t.Fatalf("accumulated response does not marshal: %v", err)
		}
	})
}

// FuzzChunks frames each line of its input as a chunk, with valid
// checksums, so that the fuzzer reaches the Messages API events inside
// Bedrock's frames rather than stopping at a frame's CRC.
func FuzzChunks(f *testing.F) {
	for _, name := range []string{"tool_use_response.sse", "redacted_thinking.sse", "compaction_usage.sse"} {
		f.Add(bytes.Join(sseEvents(f, fixture(f, name)), []byte("\n")))
	}
	f.Add([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}` + "\n" + `{"type":"message_stop"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var body bytes.Buffer
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			body.Write(fakemodel.BedrockChunk(line))
		}
		n := 0
		var acc model.Accumulator
		decode(&body, 0, func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			if n > 2*len(data)+2 {
				t.Fatalf("%d parts from %d bytes", n, len(data))
			}
			if err == nil {
				_ = acc.Add(p)
			}
			return true
		})
		if _, err := json.Marshal(acc.Response()); err != nil {
			t.Fatalf("accumulated response does not marshal: %v", err)
		}
	})
}
