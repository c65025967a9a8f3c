package tools

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
	"strings"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/sluicehq/sluice/tool"
)

// Limits of WebFetch, used when its fields are zero.
const (
	DefaultMaxFetchBytes = 10 << 20 // what is read of a response body
	DefaultMaxFetchChars = 100_000  // what the model gets of the page's text
	DefaultFetchTimeout  = 60 * time.Second
)

// ErrFetch is wrapped by WebFetch's errors: a URL it will not fetch, a
// response it cannot use.
var ErrFetch = errors.New("web fetch")

// WebFetch fetches a URL and gives the model its text: HTML as Markdown,
// other text as it is. It asks for approval (an Execute tool: it reaches
// the network), sends no credentials, and follows redirects only on the
// same host: a redirect elsewhere is reported for the model to fetch the
// new URL itself, so that approving one host never approves another.
//
// Claude Code runs a small model over the page with the call's prompt;
// sluice gives the main model the page itself (bounded), with the prompt
// restated above it, which keeps the tool free of a second model request.
type WebFetch struct {
	// Client makes the requests (nil: a client with DefaultFetchTimeout).
	Client *http.Client
	// MaxBytes bounds the body read; 0 means DefaultMaxFetchBytes.
	MaxBytes int64
	// MaxChars bounds the text returned; 0 means DefaultMaxFetchChars.
	MaxChars int
}

type webFetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

// Name implements tool.Tool.
func (*WebFetch) Name() string { return "WebFetch" }

// Kind implements tool.Tool.
func (*WebFetch) Kind() tool.Kind { return tool.Execute }

// Description implements tool.Tool.
func (*WebFetch) Description() string {
	return `Fetches a web page and returns its content as Markdown (HTML is converted; other text is returned as it is).

- url must be a fully formed http or https URL; prompt says what you want from the page.
- The content is cut to 100,000 characters; binary content is refused.
- A redirect to another host is not followed: the result names the new URL, fetch it with a new call.
- Read-only: it changes nothing, but it needs approval for each new host because it reaches the network.`
}

// Schema implements tool.Tool.
func (*WebFetch) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "description": "The URL to fetch content from"},
    "prompt": {"type": "string", "description": "What to look for in the fetched content"}
  },
  "required": ["url", "prompt"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the URL.
func (*WebFetch) Compact(params json.RawMessage) string {
	var in webFetchInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	return in.URL
}

// ApprovalScope implements permission.Scoped: a call is approved for its
// URL's host, so that "always" approves that host for the session and a new
// host asks again.
func (*WebFetch) ApprovalScope(params json.RawMessage) (string, string) {
	var in webFetchInput
	if json.Unmarshal(params, &in) != nil {
		return "", ""
	}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil || u.Hostname() == "" {
		return "", ""
	}
	host := strings.ToLower(u.Hostname())
	return "domain:" + host, "WebFetch fetches from " + host + ", a host not yet approved in this session (always: this host only)"
}

// errOffHost stops the client at a redirect to another host.
type errOffHost struct{ to *url.URL }

func (e *errOffHost) Error() string { return "redirect to " + e.to.String() }

// Run implements tool.Tool.
func (w *WebFetch) Run(ctx context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in webFetchInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, err
	}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tool.Result{}, fmt.Errorf("%w: %q is not an http or https URL", ErrFetch, in.URL)
	}
	if u.User != nil {
		return tool.Result{}, fmt.Errorf("%w: URLs with credentials are not fetched", ErrFetch)
	}
	client := *w.client() // a copy: CheckRedirect is per call
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("%w: more than 10 redirects", ErrFetch)
		}
		if req.URL.Host != u.Host {
			return &errOffHost{to: req.URL}
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	req.Header.Set("Accept", "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1")
	req.Header.Set("User-Agent", "sluice (WebFetch)")
	resp, err := client.Do(req)
	var off *errOffHost
	if errors.As(err, &off) {
		return tool.Result{
			Content: fmt.Sprintf("%s redirects to another host: %s\nTo read it, call WebFetch again with that URL.", u, off.to),
			Summary: "redirected to " + off.to.Host,
		}, nil
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, w.maxBytes()+1))
	if err != nil {
		return tool.Result{}, fmt.Errorf("%w: reading %s: %v", ErrFetch, u, err)
	}
	if int64(len(body)) > w.maxBytes() {
		return tool.Result{}, fmt.Errorf("%w: %s is larger than %d MiB", ErrFetch, u, w.maxBytes()>>20)
	}
	text, err := pageText(resp.Header.Get("Content-Type"), body, resp.Request.URL)
	if err != nil {
		return tool.Result{}, err
	}
	cut := false
	if max := w.maxChars(); utf8.RuneCountInString(text) > max {
		text, cut = string([]rune(text)[:max]), true
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Fetched %s (HTTP %d).\n", resp.Request.URL, resp.StatusCode)
	if in.Prompt != "" {
		fmt.Fprintf(&sb, "Asked of the page: %s\n", in.Prompt)
	}
	sb.WriteString("\n")
	sb.WriteString(text)
	if cut {
		fmt.Fprintf(&sb, "\n\n[cut at %d characters]", w.maxChars())
	}
	return tool.Result{
		Content: sb.String(),
		IsError: resp.StatusCode >= 400,
		Summary: fmt.Sprintf("HTTP %d, %s", resp.StatusCode, plural(countLines(text), "line")),
	}, nil
}

// pageText turns a body into text for the model by its media type.
func pageText(contentType string, body []byte, base *url.URL) (string, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "" {
		mt = http.DetectContentType(body)
		mt, _, _ = mime.ParseMediaType(mt)
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		md, err := htmltomarkdown.ConvertReader(bytes.NewReader(body), converter.WithDomain(base.Scheme+"://"+base.Host))
		if err != nil {
			return "", fmt.Errorf("%w: converting the page: %v", ErrFetch, err)
		}
		return strings.TrimSpace(string(md)), nil
	case strings.HasPrefix(mt, "text/"), mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"), mt == "application/javascript":
		if !utf8.Valid(body) {
			return strings.ToValidUTF8(string(body), "\uFFFD"), nil
		}
		return string(body), nil
	}
	return "", fmt.Errorf("%w: %s is not text; it is not fetched", ErrFetch, mt)
}

func (w *WebFetch) client() *http.Client {
	if w.Client != nil {
		return w.Client
	}
	return &http.Client{Timeout: DefaultFetchTimeout}
}

func (w *WebFetch) maxBytes() int64 {
	if w.MaxBytes > 0 {
		return w.MaxBytes
	}
	return DefaultMaxFetchBytes
}

func (w *WebFetch) maxChars() int {
	if w.MaxChars > 0 {
		return w.MaxChars
	}
	return DefaultMaxFetchChars
}
