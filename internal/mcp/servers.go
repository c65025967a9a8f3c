package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/tool"
)

// Defaults of Options.
const (
	// DefaultStartTimeout bounds a server's start: process start or HTTP
	// connection, initialize and listing its tools (Claude Code's
	// MCP_TIMEOUT default).
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopGrace is how long a stdio server has to exit after its
	// stdin closes, and again after SIGTERM, before it is killed.
	DefaultStopGrace = 2 * time.Second
	// DefaultMaxOutput bounds a call's result, in bytes: 100 KB is about
	// Claude Code's 25,000-token limit on MCP output.
	DefaultMaxOutput = 100_000
)

// ErrClosed is returned by calls made after Servers.Close.
var ErrClosed = errors.New("MCP servers are closed")

// Options tune Connect. The zero value is ready to use.
type Options struct {
	// Dir is the working directory of stdio servers; "" means this
	// process's.
	Dir string
	// Version is sluice's version, sent to servers in initialize.
	Version string
	// StartTimeout bounds each server's start; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is the time between closing a stdio server's stdin,
	// SIGTERM and SIGKILL; 0 means DefaultStopGrace.
	StopGrace time.Duration
	// MaxOutput bounds each call's result in bytes; 0 means
	// DefaultMaxOutput. Progress messages stream regardless.
	MaxOutput int
	// ChildEnv is the policy for stdio servers' environments (package
	// childenv); a server's own Env is always passed.
	ChildEnv childenv.Policy
}

// ServerError reports a server that could not be started or used. Its
// message shows the values of the server's env and headers, and its URL's
// query and password, as "***": transports quote URLs, and servers echo
// their tokens.
type ServerError struct {
	Server string // its name in the config
	Err    error
	// Exit is how its process ended ("exit status 1") when it ended on
	// its own.
	Exit string
	// Stderr is the end of what the process wrote to stderr, secrets
	// replaced.
	Stderr string

	secrets []string
}

func (e *ServerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %q: %v", e.Server, e.Err)
	if e.Exit != "" {
		b.WriteString(" (" + e.Exit + ")")
	}
	if e.Stderr != "" {
		b.WriteString("\n  stderr: " + strings.ReplaceAll(e.Stderr, "\n", "\n  stderr: "))
	}
	return redact(b.String(), e.secrets)
}

func (e *ServerError) Unwrap() error { return e.Err }

// Status is a server's state, for display (print mode's system/init
// mcp_servers, a /mcp command).
type Status struct {
	Name string
	// State is "connected" or "failed", as Claude Code reports it.
	State string
	// Tools is how many tools the server contributed.
	Tools int
	// Err is why it failed, for a failed server.
	Err error
}

// Servers is a set of connected MCP servers and their tools.
//
// Tools may be called concurrently, from any goroutine, until Close. Close
// stops every server; calls in flight then fail, later calls return
// ErrClosed.
type Servers struct {
	servers []*server // connected, in name order
	tools   []tool.Tool
	status  []Status

	closeOnce sync.Once
	closeErr  error
}

// server is one connected server.
type server struct {
	name      string
	secrets   []string // kept out of messages
	session   *sdk.ClientSession
	proc      *process        // stdio servers
	http      *http.Transport // HTTP servers: its idle connections go at Close
	cancel    context.CancelFunc
	grace     time.Duration
	maxOutput int

	// mu guards closed and calls. A progress notification is written to
	// its call's Output under mu, and a call removes its entry under mu
	// before it returns: so no output reaches a call that has ended.
	mu       sync.Mutex
	closed   bool
	calls    map[string]*inflight // by progress token
	nextCall uint64
}

// inflight is a call in progress.
type inflight struct {
	out    tool.Output
	cancel context.CancelCauseFunc // stop ends the call with ErrClosed
}

// Connect starts or connects to every server in cfg, concurrently, and
// lists their tools. Servers that fail are left out and reported in the
// returned error, one *ServerError each (joined with errors.Join); the
// others are ready. The returned Servers is never nil and must be closed,
// whatever the error.
//
// ctx bounds the start only: servers keep running after it is done, until
// Close.
func Connect(ctx context.Context, cfg *Config, opts *Options) (*Servers, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}

	var names []string
	if cfg != nil {
		for name, sc := range cfg.Servers {
			if sc.Type != TypeSDK { // the host's, reached through print mode
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	type outcome struct {
		srv   *server
		tools []tool.Tool
		errs  []error
	}
	outcomes := make([]outcome, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			srv, ts, errs := connectServer(ctx, name, cfg.Servers[name], &o)
			outcomes[i] = outcome{srv, ts, errs}
		})
	}
	wg.Wait()

	s := &Servers{}
	var errs []error
	for i, oc := range outcomes {
		errs = append(errs, oc.errs...)
		if oc.srv == nil {
			var err error
			if len(oc.errs) > 0 {
				err = oc.errs[0]
			}
			s.status = append(s.status, Status{Name: names[i], State: "failed", Err: err})
			continue
		}
		s.servers = append(s.servers, oc.srv)
		s.tools = append(s.tools, oc.tools...)
		s.status = append(s.status, Status{Name: names[i], State: "connected", Tools: len(oc.tools)})
	}
	if cfg != nil {
		for _, name := range slices.Sorted(maps.Keys(cfg.Failed)) {
			errs = append(errs, cfg.Failed[name])
			s.status = append(s.status, Status{Name: name, State: "failed", Err: cfg.Failed[name]})
		}
	}
	return s, errors.Join(errs...)
}

// connectServer starts one server and lists its tools. On failure it
// returns a nil server, having stopped whatever it started. Tools it had to
// leave out (names that collide) are reported in errs with a live server.
func connectServer(ctx context.Context, name string, sc ServerConfig, o *Options) (*server, []tool.Tool, []error) {
	startCtx, cancelStart := context.WithTimeout(ctx, o.StartTimeout)
	defer cancelStart()
	// The connection outlives the start, but a start that is cancelled or
	// times out must also end a connection in progress (an SSE stream's
	// GET is bound to the context Connect gets).
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLink := context.AfterFunc(startCtx, cancel)

	s := &server{
		name: name, secrets: sc.secrets(), cancel: cancel,
		grace: o.StopGrace, maxOutput: o.MaxOutput, calls: map[string]*inflight{},
	}
	fail := func(err error) (*server, []tool.Tool, []error) {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", o.StartTimeout, err)
		}
		_ = s.stop()
		// After stop, so that stderr is complete.
		return nil, nil, []error{s.describe(err)}
	}

	var transport sdk.Transport
	switch sc.Type {
	case TypeStdio:
		p, err := startProcess(sc, o.Dir, o.ChildEnv, o.StopGrace)
		if err != nil {
			cancel()
			return nil, nil, []error{s.describe(err)}
		}
		s.proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	case TypeHTTP, TypeSSE:
		base, _ := http.DefaultTransport.(*http.Transport)
		s.http = base.Clone()
		client := &http.Client{Transport: &headerTransport{base: s.http, headers: sc.Headers}}
		if sc.Type == TypeHTTP {
			transport = &sdk.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: client}
		} else {
			transport = &sdk.SSEClientTransport{Endpoint: sc.URL, HTTPClient: client}
		}
	case TypeWS:
		transport = &wsTransport{url: sc.URL, headers: sc.Headers}
	default:
		cancel()
		return nil, nil, []error{s.describe(fmt.Errorf("%w: unknown type %q", ErrConfig, sc.Type))}
	}

	version := o.Version
	if version == "" {
		version = "dev"
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "sluice", Version: version}, &sdk.ClientOptions{
		// No roots (sluice's tools have their own idea of allowed
		// directories, and the feature is deprecated), no sampling.
		Capabilities:                &sdk.ClientCapabilities{},
		ProgressNotificationHandler: s.onProgress,
	})
	session, err := client.Connect(startCtx, lifeTransport{transport, life}, nil)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	s.session = session

	var ts []tool.Tool
	var errs []error
	taken := map[string]string{}
	for t, err := range session.Tools(startCtx, nil) { // follows nextCursor
		if err != nil {
			return fail(fmt.Errorf("list tools: %w", err))
		}
		mt, err := newTool(s, t)
		if err != nil {
			errs = append(errs, s.describe(err))
			continue
		}
		if other, ok := taken[mt.name]; ok {
			errs = append(errs, s.describe(fmt.Errorf("tool %q left out: tool %q already has the name %s", t.Name, other, mt.name)))
			continue
		}
		taken[mt.name] = t.Name
		ts = append(ts, mt)
	}
	if !stopLink() {
		// The start timed out or was cancelled just as it succeeded.
		return fail(fmt.Errorf("connect: %w", context.Cause(startCtx)))
	}
	return s, ts, errs
}

// lifeTransport connects its Transport with a context that lives as long as
// the server, whatever context the SDK's Connect passes.
type lifeTransport struct {
	sdk.Transport
	ctx context.Context
}

func (t lifeTransport) Connect(context.Context) (sdk.Connection, error) {
	return t.Transport.Connect(t.ctx)
}

// headerTransport adds the config's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// onProgress writes a progress notification to the Output of the call it
// belongs to.
func (s *server) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[token]; c != nil {
		_, _ = c.out.Write([]byte(formatProgress(p)))
	}
}

// formatProgress renders a progress notification as one line:
// "[3/10] message".
func formatProgress(p *sdk.ProgressNotificationParams) string {
	var b strings.Builder
	if p.Total > 0 {
		fmt.Fprintf(&b, "[%g/%g]", p.Progress, p.Total)
	} else {
		fmt.Fprintf(&b, "[%g]", p.Progress)
	}
	if msg := strings.TrimSpace(p.Message); msg != "" {
		b.WriteString(" " + strings.ReplaceAll(msg, "\n", " "))
	}
	b.WriteByte('\n')
	return b.String()
}

// call runs one tool call, streaming its progress to out.
func (s *server) call(ctx context.Context, name string, args any, out tool.Output) (*sdk.CallToolResult, error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.nextCall++
	token := fmt.Sprintf("sluice-%d", s.nextCall)
	s.calls[token] = &inflight{out: out, cancel: cancel}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, token)
		s.mu.Unlock()
	}()

	params := &sdk.CallToolParams{Name: name, Arguments: args}
	params.SetProgressToken(token)
	res, err := s.session.CallTool(callCtx, params)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		// The user aborted: the SDK has told the server to cancel.
		return nil, context.Cause(ctx)
	case errors.Is(context.Cause(callCtx), ErrClosed):
		return nil, ErrClosed
	default:
		if s.proc != nil && (errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed)) {
			// The server is gone or going: give it a moment to be reaped,
			// so that the error says how it ended and what it said.
			s.proc.waitFor(s.grace)
		}
		return nil, s.describe(err)
	}
}

// describe wraps err with the server's name and, for a process that has
// exited, how it ended and its last words on stderr.
func (s *server) describe(err error) *ServerError {
	e := &ServerError{Server: s.name, Err: err, secrets: s.secrets}
	if s.proc != nil {
		var ended bool
		if ended, e.Exit = s.proc.exited(); ended {
			e.Stderr = redact(s.proc.stderr.lastLines(5, 1024), s.secrets)
		}
	}
	return e
}

// stop ends the server's calls, connection and process. It returns the
// session's close error.
func (s *server) stop() error {
	s.mu.Lock()
	s.closed = true
	// The session's Close waits for calls in flight to end; a server need
	// not answer them.
	for _, c := range s.calls {
		c.cancel(ErrClosed)
	}
	s.mu.Unlock()
	var err error
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if s.session != nil {
			err = s.session.Close()
		}
	}()
	if s.proc != nil {
		// Concurrently with the session's Close: a server that is gone
		// ends whatever the session still waits for (the read side's EOF
		// retires every request).
		s.proc.stop(s.grace)
	}
	<-closed
	s.cancel()
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
	return err
}

// Tools returns the servers' tools, in server then listing order.
func (s *Servers) Tools() []tool.Tool { return slices.Clone(s.tools) }

// Status returns every configured server's state, in name order.
func (s *Servers) Status() []Status { return slices.Clone(s.status) }

// Close stops every server, concurrently: a stdio server gets its stdin
// closed, then SIGTERM, then SIGKILL (to its whole process group), each
// Options.StopGrace apart; an HTTP server's session is deleted. Close
// returns once every process has been reaped. It is safe to call more than
// once and from several goroutines; every call returns the first's result:
// the errors of sessions that did not close cleanly (a stdio server that
// had already died is not one).
func (s *Servers) Close() error {
	s.closeOnce.Do(func() {
		errs := make([]error, len(s.servers))
		var wg sync.WaitGroup
		for i, srv := range s.servers {
			wg.Go(func() {
				if err := srv.stop(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
					errs[i] = srv.describe(fmt.Errorf("close: %w", err))
				}
			})
		}
		wg.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
