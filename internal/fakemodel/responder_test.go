package fakemodel

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Written counts every byte of the streamed bodies a client was sent, and
// Request.Body is what the client posted.
func TestServerWrittenAndBody(t *testing.T) {
	t.Parallel()
	const posted = `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	bodies := make(chan string, 2)
	s := New(func(r Request) Answer {
		bodies <- string(r.Body)
		return Answer{Text: Chunks(strings.Repeat("x", 5000), 1000)}
	})
	defer s.Close()
	var read int64
	for range 2 {
		resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(posted))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if got := s.Written(); got != read || read < 10000 {
		t.Fatalf("Written %d, the client read %d", got, read)
	}
	for range 2 {
		if b := <-bodies; b != posted {
			t.Fatalf("Body %q, want %q", b, posted)
		}
	}
}
