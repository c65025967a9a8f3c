package vertex

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/gemini"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
)

// A gemini-* model goes to the google publisher's streamGenerateContent
// with the same bearer token, its body is the Gemini API's, and its
// stream is read by the gemini decoder: the recorded stream gives the
// parts it gives from the Gemini API.
func TestGeminiModel(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "gemini", "testdata", "pro_thought_function_call.sse"))
	if err != nil {
		t.Fatal(err)
	}
	p, f, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "alt=sse" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		fakemodel.ServeSSE(w, raw, true)
	})
	req := &model.Request{Model: "gemini-2.5-pro", MaxTokens: 50, Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "root of 132413?"}}},
	}}
	parts, err := pt.Attempt(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	got := f.last()
	if want := "/v1/projects/" + project + "/locations/" + region + "/publishers/google/models/gemini-2.5-pro:streamGenerateContent"; got.path != want {
		t.Fatalf("path %s, want %s", got.path, want)
	}
	wantBody, _ := gemini.Body(req, "gemini-2.5-pro")
	if string(got.body) != string(wantBody) {
		t.Fatalf("body %s", got.body)
	}
	r := pt.Accumulate(t, parts)
	if r.StopReason != model.StopToolUse || len(r.Content) != 2 || r.Content[1].ID != "123rgs2b" || r.Content[1].Signature == "" {
		b, _ := json.Marshal(r)
		t.Fatalf("got %s", b)
	}
}

// A Gemini model's errors are Google's: a 429 waits as RetryInfo says,
// the fallback after repeated failures is generateContent, and a prompt
// too long is an overflow.
func TestGeminiErrorsAndFallback(t *testing.T) {
	t.Parallel()
	var streams atomic.Int32
	p, _, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "gemini-9"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`)
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Whole"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1},"modelVersion":"gemini-2.5-flash","responseId":"v1"}`)
		case streams.Add(1) == 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2.5s"}]}}`)
		default:
			fakemodel.ServeSSE(w, []byte(`data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`+"\n\n"), false)
		}
	})
	req := &model.Request{Model: "gemini-2.5-flash", Messages: hi.Messages}
	parts, waits, err := pt.StreamAll(t, p, req, model.StreamOptions{})
	if err != nil || len(waits) < 2 || waits[0] != 2500*time.Millisecond {
		t.Fatalf("%v after %d streams, waits %v", err, streams.Load(), waits)
	}
	if r := pt.Accumulate(t, parts); !reflect.DeepEqual(r.Content, []model.Content{{Type: model.ContentText, Text: "Whole"}}) {
		t.Fatalf("%+v", r)
	}
	req.Model = "gemini-9"
	_, _, err = pt.StreamAll(t, p, req, model.StreamOptions{})
	if !errors.Is(err, model.ErrContextOverflow) || !strings.Contains(err.Error(), "vertex API error 400 INVALID_ARGUMENT") {
		t.Fatalf("err = %v", err)
	}
}
