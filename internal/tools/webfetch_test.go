package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/tool"
)

func TestWebFetch(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a redirect off the host was followed: %s", r.URL)
	}))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("credentials sent: %v", r.Header)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<html><head><title>T</title><script>alert(1)</script></head><body><h1>Release notes</h1><p>Version <b>2</b> adds <a href="/docs">docs</a>.</p></body></html>`))
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("line one\nline two\n"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("x", 2048)))
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("é", 300)))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.Handle("/moved", http.RedirectHandler("/plain", http.StatusMovedPermanently))
	mux.Handle("/away", http.RedirectHandler(other.URL+"/elsewhere", http.StatusFound))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	tests := []struct {
		name, url string
		want      []string // in the content
		summary   string
		isError   bool
		err       string // in the error; the call fails
	}{
		{name: "HTML as Markdown", url: "/page", want: []string{"# Release notes", "Version **2** adds [docs](" + srv.URL + "/docs).", "Asked of the page: what changed?"}, summary: "HTTP 200, 3 lines"},
		{name: "text as it is", url: "/plain", want: []string{"line one\nline two"}},
		{name: "JSON as it is", url: "/json", want: []string{`{"ok":true}`}},
		{name: "a redirect on the host", url: "/moved", want: []string{"Fetched " + srv.URL + "/plain", "line two"}},
		{name: "a redirect to another host is reported", url: "/away", want: []string{"redirects to another host: " + other.URL + "/elsewhere"}},
		{name: "an HTTP error is a failed result", url: "/missing", want: []string{"HTTP 404", "no such page"}, isError: true},
		{name: "long text is cut", url: "/long", want: []string{strings.Repeat("é", 100) + "\n\n[cut at 100 characters]"}},
		{name: "binary content", url: "/image", err: "image/png is not text"},
		{name: "too large", url: "/big", err: "larger than"},
		{name: "not http", url: "file:///etc/passwd", err: "not an http or https URL"},
		{name: "credentials in the URL", url: "http://user:pw@" + strings.TrimPrefix(srv.URL, "http://") + "/plain", err: "credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := tt.url
			if strings.HasPrefix(u, "/") {
				u = srv.URL + u
			}
			params, _ := json.Marshal(webFetchInput{URL: u, Prompt: "what changed?"})
			w := &WebFetch{MaxBytes: 1024, MaxChars: 100}
			if got := w.Compact(params); got != u {
				t.Errorf("Compact = %q", got)
			}
			res, err := w.Run(context.Background(), &tool.Env{}, params, nil)
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want ErrFetch with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(res.Content, want) {
					t.Errorf("content lacks %q:\n%s", want, res.Content)
				}
			}
			if strings.Contains(res.Content, "alert(1)") {
				t.Errorf("the page's script reached the model:\n%s", res.Content)
			}
			if res.IsError != tt.isError {
				t.Errorf("IsError %v", res.IsError)
			}
			if tt.summary != "" && res.Summary != tt.summary {
				t.Errorf("summary %q, want %q", res.Summary, tt.summary)
			}
		})
	}
}
