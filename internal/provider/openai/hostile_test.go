package openai

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
)

// A 200 whose body is an error document, in each server's shape, is the
// API error it describes; a document that is not a chat completion is
// malformed. Neither is an empty success.
func TestCompleteErrorDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, typ, message string
	}{
		{`{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, "rate_limit_error", "Rate limit reached"},
		{`{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`, "NotFoundError", "The model does not exist."},
		{`{"error":"model 'llama9' not found"}`, "", "model 'llama9' not found"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{`{}`, "", ""},
		{`{"id":"x","object":"chat.completion"}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			p := server(t, fakemodel.JSON(http.StatusOK, tt.body))
			_, err := p.Complete(t.Context(), hi)
			if tt.message == "" {
				if !errors.Is(err, model.ErrMalformedEvent) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var apiErr *model.APIError
			if !errors.As(err, &apiErr) || apiErr.Type != tt.typ || apiErr.Message != tt.message {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// Mistral's non-streaming answer has the same array of parts as its
// stream.
func TestCompleteContentParts(t *testing.T) {
	t.Parallel()
	p := server(t, fakemodel.JSON(http.StatusOK, `{"id":"c1","object":"chat.completion","model":"magistral-small-2507","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Short."}]},{"type":"text","text":"Yes."}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`))
	r, err := p.Complete(t.Context(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Content, []model.Content{reasoning("Short."), text("Yes.")}) {
		t.Fatalf("%+v", r.Content)
	}
}

// The bearer token never follows a redirect to another host.
func TestRedirectKeepsToken(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []string
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(other.Close)
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !errors.Is(err, model.ErrRedirect) || len(waits) != 0 || strings.Contains(err.Error(), "sk-test-secret") {
		t.Fatalf("err = %v after %d retries", err, len(waits))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("the other host got %q", got)
	}
}
