package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/wire"
)

func init() {
	register("rpc", "serve the host protocol (JSON-RPC 2.0, one message per line) on stdin/stdout", rpcMain)
}

// rpcMain serves one host on stdin/stdout until stdin closes, then closes
// the sessions (their files flushed) and exits. Stdout carries protocol
// messages only; the log goes to stderr.
func rpcMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice rpc", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var af cli.AgentFlags
	af.Register(fs)
	maxMessage := fs.Int("max-message-bytes", wire.DefaultMaxMessageBytes, "largest request line read; longer lines are answered with an error and skipped")
	verbose := fs.Bool("verbose", false, "log debug messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := newLogger(stdio.Err, *verbose)
	srv, setup, err := hostServer(ctx, &af, *maxMessage, rpcMaxQueued, log, nil)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice rpc:", err)
		return 2
	}
	defer setup.Close()
	serveErr := srv.ServeConn(ctx, wire.NewLineConn(stdio.In, stdio.Out, *maxMessage))
	closeErr := srv.Close()
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		log.Error("connection ended", "err", serveErr)
		return 1
	}
	if closeErr != nil {
		log.Error("closing the sessions", "err", closeErr)
		return 1
	}
	return 0
}

// rpcMaxQueued bounds what sluice rpc queues for a host that stops reading
// its stdout: its one host is the session's audience, so the model's
// stream waits for it (as a pipe would) rather than piling up in memory.
const rpcMaxQueued = 1 << 20

// hostServer is the host protocol's server for the agent flags: sluice rpc
// and sluice serve share it. A host's initialize may still set the working
// directory, permission mode and model of its session. maxQueued is
// rpc.Options.MaxQueuedBytes.
//
// With join (cluster mode) the sessions are stored where join says and run
// by the node it starts.
func hostServer(ctx context.Context, af *cli.AgentFlags, maxMessage, maxQueued int, log *slog.Logger, join func(*cli.Setup) (session.Host, error)) (*rpc.Server, *cli.Setup, error) {
	setup, err := af.Setup(os.Getenv, log)
	if err != nil {
		return nil, nil, err
	}
	var host session.Host
	if join != nil {
		if host, err = join(setup); err != nil {
			return nil, nil, err
		}
	}
	if n := setup.Selection.Notice; n != "" {
		log.Info(n)
	}
	if err := setup.StartMCP(ctx); err != nil {
		log.Warn("MCP servers", "err", err)
	}
	return rpc.NewServer(rpc.Options{
		NewSession: func(context.Context, rpc.SessionConfig) (agent.Options, error) {
			return setup.Options, nil
		},
		Store:           setup.Store,
		WorkDir:         setup.Options.WorkDir,
		MaxMessageBytes: maxMessage,
		MaxQueuedBytes:  maxQueued,
		Logger:          log,
		Version:         cli.Version,
		Host:            host,
	}), setup, nil
}

func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
