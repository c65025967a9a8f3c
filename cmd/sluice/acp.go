package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/acp"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/provider"
)

func init() {
	register("acp", "serve the Agent Client Protocol on stdin/stdout (Zed, JetBrains, Neovim, ...)", acpMain)
}

// acpMain runs an ACP agent on stdin/stdout until stdin closes. Stdout
// carries protocol messages only; the log goes to stderr.
func acpMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice acp", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var af cli.AgentFlags
	af.Register(fs)
	maxMessage := fs.Int("max-message-bytes", acp.DefaultMaxLineBytes, "largest message read; longer lines are answered with an error and skipped")
	verbose := fs.Bool("verbose", false, "log debug messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := newLogger(stdio.Err, *verbose)
	setup, err := af.Setup(os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice acp:", err)
		return 2
	}
	defer setup.Close()
	if n := setup.Selection.Notice; n != "" {
		log.Info(n)
	}
	if err := setup.StartMCP(ctx); err != nil {
		log.Warn("MCP servers", "err", err)
	}
	err = acp.Serve(ctx, acp.Options{
		Agent:        setup.Options,
		Models:       provider.Models(setup.Selection.Name),
		Version:      cli.Version,
		MaxLineBytes: *maxMessage,
		Logger:       log,
		// The hooks of the project each session opens in.
		Hooks: func(cwd string) (agent.Hooks, error) {
			return hooks.ForProject(os.Getenv("HOME"), cwd, setup.Options.ChildEnv, log)
		},
	}, stdio.In, stdio.Out)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("acp", "err", err)
		return 1
	}
	return 0
}
