// Package web is sluice's web face: an HTTP handler that serves a page
// rendering a live agent session and speaks the JSON-RPC host protocol over
// a WebSocket (/ws), one JSON-RPC message per WebSocket message. The
// protocol itself is package rpc's server: this package only carries it
// (wsConn, an wire.Conn) and coalesces what goes out (outbox).
//
// # Security
//
// The page, its assets and the WebSocket all require the server's token:
// in the query (?token=...) or in the cookie the page sets when it is
// opened with the token (HttpOnly, SameSite=Strict, named after the token so
// that two servers on one host do not clobber each other's). Tokens are
// compared in constant time. The Host header must name a loopback address
// (or an allowed host), which defeats DNS rebinding, and the WebSocket's
// Origin must be the page's own (or an allowed origin). The page is served
// with a strict Content-Security-Policy (scripts only from the server, no
// inline script, no framing) and no Referer, so that a link the model wrote
// never carries the token away. Model output is rendered as DOM text, never
// as HTML (see static/markdown.js and static/view.js).
//
// # Concurrency
//
// A Server is safe for concurrent use. Each WebSocket runs the rpc server's
// ServeConn on the request's goroutine and a writer goroutine that drains
// the connection's outbox; Close ends every connection and waits for both.
//
// # Tests
//
//	go test -race ./internal/web/...   # Go tests, and the page in headless Chromium
//	node --test internal/web/jstest/    # the JavaScript reducer against protocol/testdata/vectors
//	go build -o /tmp/sluice ./cmd/sluice && go run ./internal/web/cmd/loadcheck -sluice /tmp/sluice -sessions 200
//
// TestBrowserLayout also remakes the page's screenshots in docs/screenshots:
//
//	go test ./internal/web -run TestBrowserLayout -screenshots "$PWD/docs/screenshots"
//
// The browser tests look for Chromium on PATH (chromium, chromium-browser,
// google-chrome) or in $SLUICE_CHROMIUM; without it they skip, unless
// $SLUICE_REQUIRE_BROWSER is set (CI), where they fail. They save
// screenshots under $SLUICE_ARTIFACTS (default: the test's temporary
// directory).
package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/wire"
)

//go:embed static
var staticFiles embed.FS

// ConnServer serves the JSON-RPC host protocol on one connection until it
// ends; *rpc.Server is one.
type ConnServer interface {
	ServeConn(ctx context.Context, c wire.Conn) error
}

// Defaults of Options.
const (
	DefaultWindow          = 16 * time.Millisecond
	DefaultMaxMessageBytes = 16 << 20
	defaultMaxQueuedBytes  = 4 << 20
	defaultWriteTimeout    = 30 * time.Second
)

// Options configure a Server.
type Options struct {
	// Token is the secret every request must carry. Required; NewToken
	// makes one.
	Token string
	// RPC serves the protocol on each WebSocket. Required.
	RPC ConnServer
	// Window is how long a delta may wait to be merged with the next ones
	// before it is sent (0: DefaultWindow; negative: send at once).
	Window time.Duration
	// MaxMessageBytes bounds one incoming message (0:
	// DefaultMaxMessageBytes).
	MaxMessageBytes int
	// AllowedOrigins are more origins whose pages may open the WebSocket
	// (coder/websocket's OriginPatterns); the page's own always may.
	AllowedOrigins []string
	// AllowedHosts are more Host header values (host names, without port)
	// accepted besides loopback addresses and "localhost".
	AllowedHosts []string
	// Logger receives diagnostics (default: discarded).
	Logger *slog.Logger

	// writeTimeout bounds the sending of one message (tests shorten it).
	writeTimeout time.Duration
	// maxQueuedBytes is the outbox limit past which the rpc server's
	// writes block.
	maxQueuedBytes int
}

// Server is the web face's HTTP handler.
type Server struct {
	opts   Options
	token  []byte
	cookie string
	assets http.Handler

	mu     sync.Mutex
	closed bool
	conns  map[*wsConn]context.CancelFunc
	wg     sync.WaitGroup
}

// NewToken returns a random token of 256 bits, hex encoded.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b)
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if len(opts.Token) < 16 {
		return nil, errors.New("web: a token of at least 16 characters is required")
	}
	if opts.RPC == nil {
		return nil, errors.New("web: Options.RPC is required")
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.writeTimeout <= 0 {
		opts.writeTimeout = defaultWriteTimeout
	}
	if opts.maxQueuedBytes <= 0 {
		opts.maxQueuedBytes = defaultMaxQueuedBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(opts.Token))
	return &Server{
		opts:   opts,
		token:  []byte(opts.Token),
		cookie: "sluice_" + hex.EncodeToString(sum[:6]),
		assets: http.StripPrefix("/static/", http.FileServerFS(sub)),
		conns:  map[*wsConn]context.CancelFunc{},
	}, nil
}

// contentSecurityPolicy allows the page's own scripts, styles and
// WebSocket and nothing else: no inline script, no eval, no remote images
// (a markdown image could carry data away), no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP routes /, /static/ and /ws.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "host not allowed", http.StatusForbidden)
		return
	}
	viaQuery, ok := s.authorized(r)
	if !ok {
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/ws":
		s.serveWS(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case r.URL.Path == "/":
		if viaQuery {
			http.SetCookie(w, &http.Cookie{
				Name: s.cookie, Value: string(s.token), Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode,
			})
		}
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, staticFiles, "static/index.html")
	case r.URL.Path == "/favicon.ico":
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(r.URL.Path, "/static/"):
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Cache-Control", "no-cache")
		s.assets.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// authorized reports whether r carries the token, and whether in its query.
func (s *Server) authorized(r *http.Request) (viaQuery, ok bool) {
	if t := r.URL.Query().Get("token"); t != "" {
		return true, subtle.ConstantTimeCompare([]byte(t), s.token) == 1
	}
	if c, err := r.Cookie(s.cookie); err == nil {
		return false, subtle.ConstantTimeCompare([]byte(c.Value), s.token) == 1
	}
	return false, false
}

// hostAllowed accepts loopback hosts and the allowed ones: a page reached
// through another name (DNS rebinding) gets nothing.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(host, a) {
			return true
		}
	}
	return false
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.opts.AllowedOrigins})
	if err != nil {
		// Accept has answered (403 for a foreign Origin).
		s.opts.Logger.Debug("websocket refused", "err", err)
		return
	}
	// wsConn.Read enforces the limit itself and skips an oversized message
	// instead of closing the connection.
	c.SetReadLimit(-1)
	conn := &wsConn{c: c, out: newOutbox(s.opts.Window, s.opts.maxQueuedBytes), max: s.opts.MaxMessageBytes, writeTimeout: s.opts.writeTimeout}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "server closing")
		return
	}
	s.conns[conn] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		s.wg.Done()
	}()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		if err := conn.out.run(ctx, conn.send); err != nil && !errors.Is(err, errOutboxClosed) {
			s.opts.Logger.Debug("websocket write failed", "err", err)
		}
		// A peer that cannot be written to is gone: end the connection so
		// that ServeConn returns.
		conn.Close()
	}()
	if err := s.opts.RPC.ServeConn(ctx, conn); err != nil {
		s.opts.Logger.Debug("websocket connection ended", "err", err)
	}
	conn.Close()
	cancel()
	<-writerDone
}

// Close ends every WebSocket connection and waits until they are done.
// Pair it with http.Server.Shutdown, which does not wait for hijacked
// connections.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c, cancel := range s.conns {
		cancel()
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ListenAndServe serves s on addr (host:port; port 0 picks a free one)
// until ctx is done, then shuts down: the HTTP server, then every
// WebSocket. ready receives the page's URL, token included, once the
// listener is open.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(pageURL string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if ready != nil {
		ready(s.PageURL(ln.Addr().String()))
	}
	select {
	case err := <-served:
		s.Close()
		return fmt.Errorf("web: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	s.Close()
	<-served
	return err
}

// PageURL is the page's address on hostport, with the token.
func (s *Server) PageURL(hostport string) string {
	return (&url.URL{Scheme: "http", Host: hostport, Path: "/", RawQuery: "token=" + url.QueryEscape(string(s.token))}).String()
}
