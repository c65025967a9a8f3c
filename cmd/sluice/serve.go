package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/web"
	"github.com/sluicehq/sluice/model"
)

func init() {
	register("serve", "serve a web page and the host protocol over WebSocket on 127.0.0.1", serveMain)
}

// serveMain runs the host protocol's server behind the web face until
// interrupted, printing the page's URL (with its token) on stdout.
func serveMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: any free port)")
	providerName := fs.String("provider", "anthropic", "model provider: anthropic")
	modelName := fs.String("model", "", "model (default: the provider's)")
	mode := fs.String("permission-mode", "default", "default permission mode of new sessions: default, acceptEdits, bypassPermissions or plan")
	maxMessage := fs.Int("max-message-bytes", web.DefaultMaxMessageBytes, "largest WebSocket message read; larger ones are answered with an error and skipped")
	verbose := fs.Bool("verbose", false, "log debug messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stdio.Err, "sluice serve:", err)
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
	if _, err := agent.ParsePermissionMode(*mode); err != nil {
		return fail(err)
	}
	provider, err := rpcProvider(*providerName, *modelName)
	if err != nil {
		return fail(err)
	}
	streamOpts, err := model.StreamOptionsFromEnv(model.StreamOptions{}, os.Getenv)
	if err != nil {
		return fail(err)
	}
	root, err := store.DefaultRoot()
	if err != nil {
		return fail(err)
	}
	rs := rpc.NewServer(rpc.Options{
		NewSession: func(ctx context.Context, cfg rpc.SessionConfig) (agent.Options, error) {
			return agent.Options{
				Provider: provider, Model: *modelName, PermissionMode: agent.PermissionMode(*mode),
				Stream: streamOpts, Logger: log,
			}, nil
		},
		Store:           store.New(root),
		MaxMessageBytes: *maxMessage,
		Logger:          log,
		Version:         "dev",
	})
	srv, err := web.New(web.Options{Token: web.NewToken(), RPC: rs, MaxMessageBytes: *maxMessage, Logger: log})
	if err != nil {
		rs.Close()
		return fail(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	serveErr := srv.ListenAndServe(ctx, addr, func(url string) { fmt.Fprintln(stdio.Out, url) })
	closeErr := rs.Close()
	if serveErr != nil {
		log.Error("serving", "err", serveErr)
		return 1
	}
	if closeErr != nil {
		log.Error("closing the sessions", "err", closeErr)
		return 1
	}
	return 0
}
