// Package httpapi holds the HTTP exchange that the model providers share:
// posting a JSON request, and turning an error answer (status, body,
// retry-after-ms, retry-after, x-should-retry, request id) into a
// *model.APIError.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/model"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client posts requests to one provider's API.
type Client struct {
	Provider string       // for errors: "anthropic", "openai"
	HTTP     *http.Client // nil means http.DefaultClient
	// Overflow reports whether an error answer says that the request does
	// not fit the model's context window; such errors wrap
	// model.ErrContextOverflow.
	Overflow func(*model.APIError) bool
	// Now is the clock for retry-after dates; nil means time.Now.
	Now func() time.Time
	// Detail, when set, reads what else an error answer's body says into
	// e (Google's retry delay, given in the body rather than a header).
	Detail func(body []byte, e *model.APIError)
}

// Post sends body to url with header and returns the response if its
// status is 2xx. Otherwise it returns the answer as an error: a
// *model.APIError, wrapped with model.ErrContextOverflow when Overflow says
// so. Network errors are returned wrapped, naming the provider.
//
// Redirects are followed only to the same scheme and host, and only those
// that keep the method and body (307, 308): the credentials in header must
// never reach another host, and a 301/302/303 would silently turn the POST
// into a GET without its body. Any other redirect fails with
// model.ErrRedirect, naming where it pointed.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", c.Provider, model.ErrInvalidRequest, err)
	}
	req.Header = header
	client := http.Client{}
	if c.HTTP != nil {
		client = *c.HTTP
	}
	next := client.CheckRedirect
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if err := checkRedirect(r, via); err != nil {
			return err
		}
		if next != nil {
			return next(r, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		var redirect *redirectError
		if errors.As(err, &redirect) {
			return nil, fmt.Errorf("%s: %w", c.Provider, redirect)
		}
		return nil, fmt.Errorf("%s: %w", c.Provider, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.Error(resp)
}

// redirectError is a redirect Post refuses to follow.
type redirectError struct {
	status   int
	from, to string
	why      string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("%v: %d from %s to %s, %s; set the base URL to where the API is", model.ErrRedirect, e.status, e.from, e.to, e.why)
}

func (e *redirectError) Unwrap() error { return model.ErrRedirect }

// checkRedirect refuses a redirect off the first request's scheme and
// host, and one that changed the method (net/http turns a POST into a
// bodiless GET on 301, 302 and 303).
func checkRedirect(r *http.Request, via []*http.Request) error {
	first, prev := via[0], via[len(via)-1]
	status := 0
	if r.Response != nil {
		status = r.Response.StatusCode
	}
	e := &redirectError{status: status, from: redact(prev.URL), to: redact(r.URL)}
	switch {
	case r.URL.Scheme != first.URL.Scheme || !strings.EqualFold(r.URL.Host, first.URL.Host):
		e.why = "another host, which must not get the credentials"
	case r.Method != first.Method:
		e.why = fmt.Sprintf("which would turn the %s into a %s without its body", first.Method, r.Method)
	default:
		return nil
	}
	return e
}

// redact is u without user information or query, for an error message.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// Error builds the error for resp, an error answer, reading (some of) its
// body.
func (c *Client) Error(resp *http.Response) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &model.APIError{
		Provider:    c.Provider,
		Status:      resp.StatusCode,
		RequestID:   firstHeader(resp.Header, "request-id", "x-request-id"),
		RetryAfter:  RetryAfter(resp.Header, now()),
		ShouldRetry: shouldRetry(resp.Header),
	}
	e.Type, e.Message = ParseError(body)
	if e.Message == "" && e.Type == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if c.Detail != nil {
		c.Detail(body, e)
	}
	return c.Wrap(e)
}

// Wrap returns e, wrapped with model.ErrContextOverflow when Overflow says
// that it is one.
func (c *Client) Wrap(e *model.APIError) error {
	if c.Overflow != nil && c.Overflow(e) {
		return fmt.Errorf("%w: %w", model.ErrContextOverflow, e)
	}
	return e
}

// ParseError reads the type and message of an error body in the shapes
// servers use: Anthropic's {"type":"error","error":{"type","message"}},
// OpenAI's {"error":{"message","type","code"}}, Google's
// {"error":{"code","message","status"}}, {"error":"text"} (Ollama),
// {"object":"error","message","type"} (vLLM). A body that is not JSON (a
// proxy's HTML page) becomes the message, shortened.
func ParseError(body []byte) (typ, message string) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", Snippet(body)
	}
	typ, message = top.Type, top.Message
	if typ == "error" {
		typ = ""
	}
	var inner struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Status  json.RawMessage `json:"status"` // Google's RESOURCE_EXHAUSTED
	}
	var text string
	switch {
	case json.Unmarshal(top.Error, &inner) == nil:
		typ, message = first(inner.Type, typ), first(inner.Message, message)
		typ = first(first(typ, code(inner.Code)), code(inner.Status))
	case json.Unmarshal(top.Error, &text) == nil:
		message = first(text, message)
	}
	return first(typ, code(top.Code)), message
}

// code is an error code given as a string ("context_length_exceeded");
// numeric codes repeat the status and say nothing more.
func code(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// RetryAfter is the wait the server asked for in retry-after-ms or
// retry-after (seconds or an HTTP date), or 0.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if s := h.Get("retry-after-ms"); s != "" {
		if ms, err := strconv.ParseFloat(s, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	s := h.Get("retry-after")
	if s == "" {
		return 0
	}
	if sec, err := strconv.ParseFloat(s, 64); err == nil {
		if sec > 0 && sec < 1e9 {
			return time.Duration(sec * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(s); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func shouldRetry(h http.Header) *bool {
	var b bool
	switch strings.ToLower(h.Get("x-should-retry")) {
	case "true":
		b = true
	case "false":
	default:
		return nil
	}
	return &b
}

// CheckEventStream returns an error wrapping model.ErrNotEventStream when a
// 2xx answer is plainly not an event stream: an HTML page (a proxy's login
// or error page) or a JSON document. A JSON error document (a 200 whose
// body says {"type":"error",...}) is the *model.APIError it describes.
// Other content types are left to the decoder, which fails the same way on
// a body holding no event.
func CheckEventStream(provider string, resp *http.Response) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/html" && mt != "application/json" {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if e := ErrorDocument(provider, body); e != nil {
		return e
	}
	return fmt.Errorf("%s: %w (%s): %s", provider, model.ErrNotEventStream, mt, Snippet(body))
}

// ErrorDocument returns the *model.APIError that body describes when it is
// a JSON error document in one of the shapes ParseError reads (Status 0:
// it came in a 2xx answer), or nil for any other body.
func ErrorDocument(provider string, body []byte) *model.APIError {
	var top struct {
		Error  json.RawMessage `json:"error"`
		Type   string          `json:"type"`
		Object string          `json:"object"`
	}
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	hasError := len(top.Error) > 0 && string(top.Error) != "null"
	if !hasError && top.Type != "error" && top.Object != "error" {
		return nil
	}
	e := &model.APIError{Provider: provider}
	e.Type, e.Message = ParseError(body)
	if e.Type == "" && e.Message == "" {
		e.Message = Snippet(body)
	}
	return e
}

// Document reads the whole body of resp, a 2xx answer to a non-streaming
// request, through model.WatchBody (bounded by the maximum response size);
// an event stream fails at once with model.ErrMalformedEvent.
// A JSON error document is returned as the *model.APIError it describes,
// wrapped as Wrap does, so that a 200 carrying an error is never taken for
// an empty answer.
func (c *Client) Document(ctx context.Context, resp *http.Response) ([]byte, error) {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		// An event stream is no answer to a non-streaming request, and
		// one that only pings would hold the fallback until its timeout.
		return nil, fmt.Errorf("%s: %w: the non-streaming request was answered with an event stream", c.Provider, model.ErrMalformedEvent)
	}
	body := model.WatchBody(ctx, resp.Body)
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", c.Provider, err)
	}
	if e := ErrorDocument(c.Provider, data); e != nil {
		return nil, c.Wrap(e)
	}
	return data, nil
}

// Snippet is the start of body as one short line, for an error message.
func Snippet(body []byte) string {
	s := strings.Join(strings.FieldsFunc(string(body), unicode.IsSpace), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// BearerJSON is the header of a JSON request to an API that takes its key
// as a bearer token (OpenAI's and the servers compatible with it),
// asking for an event stream when stream is set; no key, no
// Authorization (a local server).
func BearerJSON(key string, stream bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}
