package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/internal/childenv"
	"github.com/sluicehq/sluice/tool"
)

// toolByName finds a tool or fails the test.
func toolByName(t *testing.T, s *Servers, name string) tool.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// serverErrors splits Connect's error into its *ServerErrors, by server.
func serverErrors(t *testing.T, err error) map[string]*ServerError {
	t.Helper()
	out := map[string]*ServerError{}
	if err == nil {
		return out
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error is not a joined list: %v", err)
	}
	for _, e := range joined.Unwrap() {
		var se *ServerError
		if !errors.As(e, &se) {
			t.Fatalf("error is not a *ServerError: %v", e)
		}
		out[se.Server] = se
	}
	return out
}

func TestConnectListsTools(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name())
	}
	var want []string
	for _, n := range testToolNames {
		want = append(want, "mcp__test__"+sanitizeName(n))
	}
	slices.Sort(want) // the SDK's server lists tools by name
	// All pages, in the server's order.
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	if got := s.Status(); !slices.Equal(got, []Status{{Name: "test", State: "connected", Tools: len(want)}}) {
		t.Errorf("Status() = %+v", got)
	}

	echo := toolByName(t, s, "mcp__test__echo")
	if echo.Description() != "Echoes text." {
		t.Errorf("description = %q", echo.Description())
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(echo.Schema(), &schema); err != nil {
		t.Fatalf("schema %s: %v", echo.Schema(), err)
	}
	if _, ok := schema.Properties["text"]; schema.Type != "object" || !ok {
		t.Errorf("schema = %s, want an object with property text", echo.Schema())
	}
	for name, want := range map[string]tool.Kind{"echo": tool.Execute, "readonly": tool.ReadOnly, "fail": tool.Execute} {
		if got := toolByName(t, s, "mcp__test__"+name).Kind(); got != want {
			t.Errorf("%s: Kind = %v, want %v", name, got, want)
		}
	}
	if got := echo.Compact(json.RawMessage(`{"text": "hi"}`)); got != `text: "hi"` {
		t.Errorf("Compact = %q", got)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(t, map[string]ServerConfig{
		"test": testServer(t, modeTools, map[string]string{"SLUICE_TEST_SECRET": "s3cret"}),
	}, &Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool    string
		params  string
		want    string // the whole content
		isError bool
		err     bool // Run returns an error
	}{
		{tool: "echo", params: `{"text":"hello"}`, want: "hello"},
		{tool: "fail", params: `{}`, want: "it failed", isError: true},
		{tool: "readonly", params: ``, want: "nothing changed"},
		{tool: "readonly", params: `null`, want: "nothing changed"},
		{tool: "media", params: `{}`, want: "a picture:\n[image: image/png, 12 KB]\n[audio: audio/wav, 100 bytes]\n" +
			"[resource link: readme file:///readme.md]\n[resource: file:///a.txt]\ninside"},
		{tool: "env", params: `{"name":"SLUICE_TEST_SECRET"}`, want: "s3cret"},
		{tool: "cwd", params: `{}`, want: dir},
		{tool: "dotted_name", params: `{}`, want: "ok"},
		{tool: "echo", params: `[1]`, err: true},
		{tool: "echo", params: `{"text":`, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.tool+tc.params, func(t *testing.T) {
			t.Parallel()
			res, err := toolByName(t, s, "mcp__test__"+tc.tool).Run(context.Background(), &tool.Env{}, json.RawMessage(tc.params), &recorder{})
			if tc.err {
				if err == nil {
					t.Fatalf("Run = %+v, want an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tc.want || res.IsError != tc.isError {
				t.Errorf("Run = %+v, want content %q, IsError %v", res, tc.want, tc.isError)
			}
		})
	}
}

func TestRunBadArguments(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The server validates arguments against the schema; whichever way it
	// says no, the call must not look like a success.
	res, err := toolByName(t, s, "mcp__test__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":42}`), &recorder{})
	if err == nil && !res.IsError {
		t.Errorf("Run with a number for a string = %+v, want a failure", res)
	}
}

func TestMaxOutput(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, &Options{MaxOutput: 5})
	if err != nil {
		t.Fatal(err)
	}
	res, err := toolByName(t, s, "mcp__test__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":"abcdéfgh"}`), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	// "é" is two bytes from the fifth: it is not cut in half.
	if want := "abcd\n[output truncated: showed 4 of 9 bytes]"; res.Content != want {
		t.Errorf("Content = %q, want %q", res.Content, want)
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &recorder{}
	errc := make(chan error, 1)
	go func() {
		_, err := toolByName(t, s, "mcp__test__slow").Run(ctx, &tool.Env{}, json.RawMessage(`{}`), out)
		errc <- err
	}()
	<-out.seen("[1/2] started\n") // the call is in flight; its progress streams
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("aborted Run: err = %v, want context.Canceled", err)
	}
	// The server is still usable.
	res, err := toolByName(t, s, "mcp__test__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":"after"}`), &recorder{})
	if err != nil || res.Content != "after" {
		t.Errorf("echo after abort = %+v, %v", res, err)
	}
}

func TestFailingServers(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{
		"good":    testServer(t, modeTools, nil),
		"broken":  testServer(t, modeExit, map[string]string{"TEST_API_KEY": "s3cret-value"}),
		"missing": {Type: TypeStdio, Command: filepath.Join(t.TempDir(), "no-such-server"), Env: map[string]string{"TOKEN": "s3cret-value"}},
	}, nil)
	if err == nil {
		t.Fatal("Connect: no error, want two failed servers")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows a secret from the server's env: %v", err)
	}
	errs := serverErrors(t, err)
	if len(errs) != 2 {
		t.Errorf("errors for %d servers, want 2: %v", len(errs), err)
	}
	broken := errs["broken"]
	// The server's stderr is kept, with the secret it quotes blotted out.
	if broken == nil || broken.Exit != "exit status 3" || broken.Stderr != "starting up\nfatal: API key \"***\" rejected" {
		t.Errorf("broken: %#v", broken)
	} else if msg := broken.Error(); !strings.Contains(msg, `MCP server "broken"`) || !strings.Contains(msg, `stderr: fatal: API key "***" rejected`) {
		t.Errorf("broken: Error() = %q", msg)
	}
	if missing := errs["missing"]; missing == nil || !errors.Is(missing, os.ErrNotExist) {
		t.Errorf("missing: %v, want os.ErrNotExist", missing)
	}

	status := s.Status()
	if len(status) != 3 || status[0].Name != "broken" || status[0].State != "failed" || status[0].Err == nil ||
		status[1] != (Status{Name: "good", State: "connected", Tools: len(testToolNames)}) ||
		status[2].Name != "missing" || status[2].State != "failed" {
		t.Errorf("Status() = %+v", status)
	}
	// The good server works.
	if len(s.Tools()) != len(testToolNames) {
		t.Errorf("%d tools, want the good server's %d", len(s.Tools()), len(testToolNames))
	}
	res, err := toolByName(t, s, "mcp__good__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":"still here"}`), &recorder{})
	if err != nil || res.Content != "still here" {
		t.Errorf("good echo = %+v, %v", res, err)
	}
}

func TestConnectCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := Connect(ctx, &Config{Servers: map[string]ServerConfig{"test": testServer(t, modeTools, nil)}}, nil)
	if s == nil {
		t.Fatalf("Connect returned no servers (it returns those that connected beside the errors of the rest): %v", err)
	}
	defer s.Close()
	if errs := serverErrors(t, err); errs["test"] == nil || !errors.Is(errs["test"], context.Canceled) {
		t.Errorf("Connect with a cancelled ctx: %v, want context.Canceled for test", err)
	}
	if len(s.Tools()) != 0 {
		t.Errorf("tools from a cancelled start: %d", len(s.Tools()))
	}
}

func TestConnectNoServers(t *testing.T) {
	t.Parallel()
	for _, cfg := range []*Config{nil, {}, {Servers: map[string]ServerConfig{}}} {
		s, err := Connect(context.Background(), cfg, nil)
		if err != nil || len(s.Tools()) != 0 || len(s.Status()) != 0 {
			t.Errorf("Connect(%+v) = %d tools, %v", cfg, len(s.Tools()), err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// TestClose checks that Close ends the server and everything it started,
// whether the server exits when its stdin closes or has to be killed, and
// that calls in flight and later fail with ErrClosed.
func TestClose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  string
		grace time.Duration
	}{
		{modeTools, 0},    // exits when its stdin closes
		{modeStubborn, 1}, // ignores that and SIGTERM: killed without waiting
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s, err := Connect(context.Background(), &Config{Servers: map[string]ServerConfig{"test": testServer(t, tc.mode, nil)}},
				&Options{StopGrace: tc.grace})
			if err != nil {
				t.Fatal(err)
			}
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			params, _ := json.Marshal(fifoIn{FIFO: fifo})
			if _, err := toolByName(t, s, "mcp__test__spawn").Run(context.Background(), &tool.Env{}, params, &recorder{}); err != nil {
				t.Fatal(err)
			}
			// The server's child holds the FIFO open for writing: reading
			// it ends when the child is gone.
			f, err := os.Open(fifo)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			out := &recorder{}
			errc := make(chan error, 1)
			go func() {
				_, err := toolByName(t, s, "mcp__test__slow").Run(context.Background(), &tool.Env{}, json.RawMessage(`{}`), out)
				errc <- err
			}()
			<-out.seen("started")

			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Errorf("call in flight at Close: %v, want ErrClosed", err)
			}
			if _, err := io.ReadAll(f); err != nil {
				t.Errorf("reading the FIFO: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			_, err = toolByName(t, s, "mcp__test__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":"x"}`), &recorder{})
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Run after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestHTTP connects to in-process streamable HTTP and SSE servers that
// require a header.
func TestHTTP(t *testing.T) {
	t.Parallel()
	const token = "Bearer t0ken"
	mcpServer := newTestServer()
	handlers := map[string]http.Handler{
		TypeHTTP: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil),
		TypeSSE:  sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil),
	}
	for typ, h := range handlers {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != token {
					http.Error(w, "who are you?", http.StatusUnauthorized)
					return
				}
				h.ServeHTTP(w, r)
			}))
			defer hs.Close()

			s, err := Connect(context.Background(), &Config{Servers: map[string]ServerConfig{
				"remote": {Type: typ, URL: hs.URL, Headers: map[string]string{"Authorization": token}},
				"denied": {Type: typ, URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer wr0ng"}},
			}}, nil)
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			errs := serverErrors(t, err)
			if len(errs) != 1 || errs["denied"] == nil {
				t.Errorf("Connect: %v, want an error for denied only", err)
			} else if strings.Contains(err.Error(), "wr0ng") {
				t.Errorf("error shows a header's value: %v", err)
			}
			for _, c := range []struct{ tool, params, want string }{
				{"echo", `{"text":"over http"}`, "over http"},
				{"readonly", `{}`, "nothing changed"},
			} {
				res, err := toolByName(t, s, "mcp__remote__"+c.tool).Run(context.Background(), &tool.Env{}, json.RawMessage(c.params), &recorder{})
				if err != nil || res.Content != c.want {
					t.Errorf("%s = %+v, %v; want %q", c.tool, res, err, c.want)
				}
			}
		})
	}
}

// TestURLSecretsRedacted checks that a transport's error, which quotes the
// URL, does not show the token in its query.
func TestURLSecretsRedacted(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	gone := hs.URL
	hs.Close() // connections to it are refused
	s, err := Connect(context.Background(), &Config{Servers: map[string]ServerConfig{
		"gone": {Type: TypeHTTP, URL: gone + "/mcp?token=query-s3cret"},
	}}, nil)
	if s == nil {
		t.Fatalf("Connect returned no servers (it returns those that connected beside the errors of the rest): %v", err)
	}
	defer s.Close()
	if err == nil {
		t.Fatal("Connect to a closed server: no error")
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "/mcp?***") {
		t.Errorf("error = %q, want the query replaced by ***", msg)
	}
}

// TestServerDies checks that calls to a server that died fail, saying how
// it ended and what it said last.
func TestServerDies(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"crash", "echo"} { // the call that kills it, then one after
		_, err := toolByName(t, s, "mcp__test__"+name).Run(context.Background(), &tool.Env{}, json.RawMessage(`{}`), &recorder{})
		var se *ServerError
		if !errors.As(err, &se) || se.Exit != "exit status 5" || se.Stderr != "panic: out of cheese" {
			t.Errorf("%s: %v, want exit status 5 and the stderr tail", name, err)
		}
	}
}

// TestServerEnvironment: a stdio server gets the child-process policy's
// environment: no provider key or secret-looking variable unless allowed,
// and its own configured env as written.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-leak")
	t.Setenv("GITHUB_TOKEN", "ghp_leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-leak")
	t.Setenv("NPM_TOKEN", "npm-allowed")
	t.Setenv("SLUICE_PLAIN", "plain")
	s, err := connect(t, map[string]ServerConfig{
		"test": testServer(t, modeTools, map[string]string{"SERVER_API_KEY": "given"}),
	}, &Options{ChildEnv: childenv.Policy{Include: []string{"NPM_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := toolByName(t, s, "mcp__test__env")
	for name, want := range map[string]string{
		"ANTHROPIC_API_KEY": "", "GITHUB_TOKEN": "", "AWS_SECRET_ACCESS_KEY": "",
		"NPM_TOKEN": "npm-allowed", "SLUICE_PLAIN": "plain", "SERVER_API_KEY": "given",
	} {
		res, err := env.Run(context.Background(), &tool.Env{}, json.RawMessage(`{"name":"`+name+`"}`), &recorder{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content != want {
			t.Errorf("the server sees %s=%q, want %q", name, res.Content, want)
		}
	}
}

// TestWebSocketSDKAndFailedEntries connects to a WebSocket server (Claude
// Code's "ws"), leaves the host's "sdk" server to print mode, and reports
// an entry that could not be used as a failed server beside the others.
func TestWebSocketSDKAndFailedEntries(t *testing.T) {
	t.Parallel()
	const token = "t0ken-ws"
	mcpServer := newTestServer()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != token {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return
		}
		ss, err := mcpServer.Connect(r.Context(), acceptedWS{c}, nil)
		if err != nil {
			return
		}
		ss.Wait()
	}))
	defer hs.Close()

	bad := fmt.Errorf("%w: server %q: environment variables not set", ErrConfig, "bad")
	s, err := Connect(context.Background(), &Config{
		Servers: map[string]ServerConfig{
			"ide": {Type: TypeWS, URL: "ws" + strings.TrimPrefix(hs.URL, "http"), Headers: map[string]string{"X-Token": token}},
			"acp": {Type: TypeSDK},
		},
		Failed: map[string]error{"bad": bad},
	}, nil)
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if !errors.Is(err, bad) {
		t.Errorf("Connect: %v, want the failed entry's error", err)
	}
	got := s.Status()
	if len(got) != 2 || got[0].Name != "ide" || got[0].State != "connected" || got[0].Tools == 0 || got[1] != (Status{Name: "bad", State: "failed", Err: bad}) {
		t.Errorf("status = %+v, want ide connected, bad failed, no acp", got)
	}
	res, err := toolByName(t, s, "mcp__ide__echo").Run(context.Background(), &tool.Env{}, json.RawMessage(`{"text":"over ws"}`), &recorder{})
	if err != nil || res.Content != "over ws" {
		t.Errorf("echo over ws = %+v, %v", res, err)
	}
}

// acceptedWS serves an accepted WebSocket as an MCP transport.
type acceptedWS struct{ c *websocket.Conn }

func (a acceptedWS) Connect(context.Context) (sdk.Connection, error) { return &wsConn{conn: a.c}, nil }
