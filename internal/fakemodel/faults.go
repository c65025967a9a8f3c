package fakemodel

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// The handlers below are the faults of a model API, or of what stands in
// front of it, at the level of bytes: the providers' tests serve them with
// httptest, one per request (Attempts), around bodies in each provider's
// own wire format, and ask a Recorder what they were sent.

// ServeSSE writes body as a 200 event stream, whole or one byte per write
// (flushed, so that every byte boundary is a read boundary).
func ServeSSE(w http.ResponseWriter, body []byte, oneByte bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if !oneByte {
		w.Write(body)
		return
	}
	f := w.(http.Flusher)
	for i := range body {
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		f.Flush()
	}
}

// SSE answers with body as a 200 event stream, whole: a stream that ends
// where body does (truncated, when body is cut short).
func SSE(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { ServeSSE(w, []byte(body), false) }
}

// Attempts serves the n-th request with the n-th handler (418 past the
// last) and counts the requests.
func Attempts(handlers ...http.HandlerFunc) (http.HandlerFunc, *atomic.Int32) {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(handlers) {
			http.Error(w, "no more attempts", http.StatusTeapot)
			return
		}
		handlers[i](w, r)
	}, &n
}

// ResetAfter writes the first n bytes of body as a 200 event stream, then
// resets the connection (TCP RST).
func ResetAfter(body string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:n])
		buf.Flush()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
}

// Stall serves h, flushes what it wrote, then holds the response open
// until release is closed (never, when nil) or the request ends: a model
// gone silent mid-answer.
func Stall(h http.HandlerFunc, release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(w, r)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// Page answers 200 with body as contentType, or with no Content-Type at
// all (none sniffed either) when contentType is empty: the HTML page of a
// proxy or a captive portal where the stream should be, or an empty body.
func Page(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType == "" {
			w.Header()["Content-Type"] = nil
		} else {
			w.Header().Set("Content-Type", contentType)
		}
		io.WriteString(w, body)
	}
}

// JSON answers status with body as application/json, with the headers
// named and valued in pairs (JSON(429, body, "retry-after", "7")): an
// API's error, or one that a 200 carries.
func JSON(status int, body string, header ...string) http.HandlerFunc {
	if len(header)%2 != 0 {
		panic("fakemodel.JSON: a header without a value")
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// Recorder serves every request with the handler it wraps, and keeps it:
// a server made of the handlers above that a test asks afterwards what it
// was sent. Its methods are safe for concurrent use.
type Recorder struct {
	h        http.Handler
	mu       sync.Mutex
	requests []Received
}

// Record wraps h.
func Record(h http.Handler) *Recorder { return &Recorder{h: h} }

func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec.mu.Lock()
	rec.requests = append(rec.requests, Received{URL: r.URL, Header: r.Header, Body: body})
	rec.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec.h.ServeHTTP(w, r)
}

// Requests returns the requests received so far.
func (rec *Recorder) Requests() []Received {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Received(nil), rec.requests...)
}
