package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/model"
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
	providerName := fs.String("provider", "anthropic", "model provider: anthropic")
	modelName := fs.String("model", "", "model (default: the provider's)")
	mode := fs.String("permission-mode", "default", "default permission mode of new sessions: default, acceptEdits, bypassPermissions or plan")
	maxMessage := fs.Int("max-message-bytes", rpc.DefaultMaxMessageBytes, "largest request line read; longer lines are answered with an error and skipped")
	verbose := fs.Bool("verbose", false, "log debug messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
	if _, err := agent.ParsePermissionMode(*mode); err != nil {
		fmt.Fprintln(stdio.Err, "sluice rpc:", err)
		return 2
	}
	provider, err := rpcProvider(*providerName, *modelName)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice rpc:", err)
		return 2
	}
	streamOpts, err := model.StreamOptionsFromEnv(model.StreamOptions{}, os.Getenv)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice rpc:", err)
		return 2
	}
	root, err := store.DefaultRoot()
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice rpc:", err)
		return 2
	}
	srv := rpc.NewServer(rpc.Options{
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
	serveErr := srv.ServeConn(ctx, rpc.NewLineConn(stdio.In, stdio.Out, *maxMessage))
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

// rpcProvider builds the model provider from the flags and the
// environment (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL).
func rpcProvider(name, modelName string) (model.Provider, error) {
	switch name {
	case "anthropic":
		key, token := os.Getenv("ANTHROPIC_API_KEY"), os.Getenv("ANTHROPIC_AUTH_TOKEN")
		if key == "" && token == "" {
			return nil, errors.New("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")
		}
		return anthropic.New(anthropic.Config{APIKey: key, AuthToken: token, BaseURL: os.Getenv("ANTHROPIC_BASE_URL"), Model: modelName}), nil
	}
	return nil, fmt.Errorf("unknown provider %q", name)
}
