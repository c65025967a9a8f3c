package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serverModeEnv makes the test binary an MCP server (or a helper process)
// instead of running the tests: the tests start it as their stdio server.
const serverModeEnv = "SLUICE_MCP_TEST_SERVER"

// Modes of the re-executed test binary.
const (
	modeTools    = "tools"    // serves the test tools on stdio, exits at EOF
	modeStubborn = "stubborn" // as modeTools, but outlives EOF and ignores SIGTERM
	modeExit     = "exit"     // complains on stderr (quoting TEST_API_KEY) and exits 3 at once
	modeSleeper  = "sleeper"  // sleeps forever (a server's child)
)

func TestMain(m *testing.M) {
	switch mode := os.Getenv(serverModeEnv); mode {
	case "":
		goleak.VerifyTestMain(m)
	case modeTools, modeStubborn:
		err := newTestServer().Run(context.Background(), &sdk.StdioTransport{})
		if mode == modeStubborn {
			signal.Ignore(syscall.SIGTERM)
			for {
				time.Sleep(time.Hour)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case modeExit:
		fmt.Fprintln(os.Stderr, "starting up")
		fmt.Fprintf(os.Stderr, "fatal: API key %q rejected\n", os.Getenv("TEST_API_KEY"))
		os.Exit(3)
	case modeSleeper:
		for {
			time.Sleep(time.Hour)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", serverModeEnv, mode)
		os.Exit(2)
	}
}

// testToolNames are the tools newTestServer serves.
var testToolNames = []string{"echo", "fail", "slow", "readonly", "media", "env", "cwd", "spawn", "crash", "dotted.name"}

type textIn struct {
	Text string `json:"text"`
}
type nameIn struct {
	Name string `json:"name"`
}
type fifoIn struct {
	FIFO string `json:"fifo"`
}
type none struct{}

// newTestServer builds the test MCP server. Its page size is 2, so that
// listing its tools takes several pages.
func newTestServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1"}, &sdk.ServerOptions{PageSize: 2})
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("it failed")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Reports progress, then waits to be cancelled."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "started",
			})
			if err != nil {
				return nil, nil, err
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "readonly", Description: "Changes nothing.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return text("nothing changed"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "media", Description: "Returns every kind of content."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: bytes.Repeat([]byte{1}, 12*1024)},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 100)},
				&sdk.ResourceLink{Name: "readme", URI: "file:///readme.md"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", Text: "inside"}},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Returns an environment variable."},
		func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "cwd", Description: "Returns the working directory."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			wd, err := os.Getwd()
			return text(wd), nil, err
		})
	sdk.AddTool(s, &sdk.Tool{Name: "spawn", Description: "Starts a child that holds fifo open for writing until it dies."},
		func(_ context.Context, _ *sdk.CallToolRequest, in fifoIn) (*sdk.CallToolResult, any, error) {
			// O_RDWR does not wait for a reader; the child is then a writer
			// of the FIFO for as long as it lives.
			f, err := os.OpenFile(in.FIFO, os.O_RDWR, 0)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			self, err := os.Executable()
			if err != nil {
				return nil, nil, err
			}
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), serverModeEnv+"="+modeSleeper)
			cmd.Stdout = f
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprint(cmd.Process.Pid)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Kills the server."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "panic: out of cheese")
			os.Exit(5)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "dotted.name", Description: "Has a name providers reject."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return text("ok"), nil, nil
		})
	return s
}

// testServer is the config of a stdio test server in mode.
func testServer(t *testing.T, mode string, env map[string]string) ServerConfig {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{serverModeEnv: mode}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Type: TypeStdio, Command: self, Env: e}
}

// connect connects to servers and closes them when the test ends.
func connect(t *testing.T, servers map[string]ServerConfig, opts *Options) (*Servers, error) {
	t.Helper()
	s, err := Connect(context.Background(), &Config{Servers: servers}, opts)
	if s == nil {
		t.Fatal("Connect returned nil Servers")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, err
}

// recorder is a tool.Output that keeps what it is given and lets a test
// wait until some text has arrived.
type recorder struct {
	mu      sync.Mutex
	buf     strings.Builder
	waiters map[string]chan struct{}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	for s, ch := range r.waiters {
		if strings.Contains(r.buf.String(), s) {
			close(ch)
			delete(r.waiters, s)
		}
	}
	return len(p), nil
}

// seen returns a channel closed once s has been written.
func (r *recorder) seen(s string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(r.buf.String(), s) {
		close(ch)
		return ch
	}
	if r.waiters == nil {
		r.waiters = map[string]chan struct{}{}
	}
	r.waiters[s] = ch
	return ch
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}
