package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/printmode"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/tui"
	"github.com/sluicehq/sluice/protocol"
)

func init() {
	register("", "the agent: interactive, or print mode with -p", agentMain)
}

// agentMain is sluice without a subcommand: the terminal UI, or with -p
// the headless print mode.
func agentMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var (
		af           cli.AgentFlags
		print        bool
		outputFormat string
		inputFormat  string
		partial      bool
		verbose      bool
		cont         bool
		resume       string
		printVersion bool
	)
	af.Register(fs)
	fs.BoolVar(&print, "p", false, "print mode: answer the prompt and exit (same as --print)")
	fs.BoolVar(&print, "print", false, "print mode: answer the prompt and exit")
	fs.StringVar(&outputFormat, "output-format", "text", "print mode output: text, json or stream-json")
	fs.StringVar(&inputFormat, "input-format", "text", "print mode input: text, or stream-json (user messages as JSON lines on stdin)")
	fs.BoolVar(&partial, "include-partial-messages", false, "stream-json: include each model stream event")
	fs.BoolVar(&verbose, "verbose", false, "log more on stderr (accepted for Claude Code compatibility; never required)")
	fs.BoolVar(&cont, "c", false, "continue the most recent session of this directory (same as --continue)")
	fs.BoolVar(&cont, "continue", false, "continue the most recent session of this directory")
	fs.StringVar(&resume, "r", "", "resume the session with this id (same as --resume)")
	fs.StringVar(&resume, "resume", "", "resume the session with this id")
	fs.BoolVar(&printVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		usage(stdio.Err)
		fmt.Fprintln(stdio.Err, "\nFlags of the agent:")
		fs.PrintDefaults()
	}
	pos, err := cli.ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if printVersion {
		fmt.Fprintln(stdio.Out, "sluice", cli.Version)
		return 0
	}
	if cont && resume != "" {
		fmt.Fprintln(stdio.Err, "sluice: --continue and --resume exclude each other")
		return 2
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
	setup, err := af.Setup(os.Getenv, logger)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 2
	}
	defer setup.Close()
	if n := setup.Selection.Notice; n != "" {
		fmt.Fprintln(stdio.Err, n)
	}
	if err := setup.StartMCP(ctx); err != nil {
		fmt.Fprintln(stdio.Err, "sluice: warning:", err)
	}
	prompt := strings.Join(pos, " ")

	if !print {
		return runTUI(ctx, setup, prompt, cont, resume, stdio)
	}
	cfg := printmode.Config{
		OutputFormat: outputFormat, InputFormat: inputFormat, IncludePartial: partial,
		Model: setup.Selection.Model, PermissionMode: string(setup.Options.PermissionMode),
		APIKeySource: setup.APIKeySource(os.Getenv), Version: cli.Version,
		AddDirs: af.AddDirs, MaxRetries: setup.Options.Stream.MaxRetries,
		Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err,
	}
	if setup.MCP != nil {
		for _, st := range setup.MCP.Status() {
			cfg.MCPServers = append(cfg.MCPServers, printmode.MCPServer{Name: st.Name, Status: st.State})
		}
	}
	if err := cfg.ValidateFormats(); err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 2
	}
	if prompt == "" && inputFormat != printmode.FormatStreamJSON {
		data, err := io.ReadAll(io.LimitReader(stdio.In, 64<<20))
		if err != nil {
			fmt.Fprintln(stdio.Err, "sluice: reading the prompt from stdin:", err)
			return 2
		}
		prompt = strings.TrimSpace(string(data))
		if prompt == "" {
			fmt.Fprintln(stdio.Err, `sluice: no prompt: give one as an argument (sluice -p "...") or on stdin`)
			return 2
		}
	}
	// Nobody is there to answer a permission prompt: what the mode does
	// not allow is denied, and the result lists the denials.
	setup.Options.Approve = func(context.Context, protocol.PermissionRequest) string { return protocol.DecisionDeny }
	sess, err := setup.OpenSession(cont, resume)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 1
	}
	defer sess.Close()
	return printmode.Run(ctx, sess, prompt, cfg)
}

func runTUI(ctx context.Context, setup *cli.Setup, prompt string, cont bool, resume string, stdio Stdio) int {
	if f, ok := stdio.Out.(*os.File); !ok || !isTerminal(f) {
		fmt.Fprintln(stdio.Err, `sluice: the interactive agent needs a terminal; for scripts use print mode: sluice -p "prompt"`)
		return 2
	}
	sess, err := setup.OpenSession(cont, resume)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 1
	}
	opts := setup.Options
	err = tui.Run(ctx, tui.Options{
		Session: sess,
		Open:    func(id string) (*agent.Session, error) { return agent.Open(opts, id) },
		List:    func() ([]agent.SessionInfo, error) { return agent.ListSessions(ctx, setup.Store, opts.WorkDir) },
		Models:  provider.Models(setup.Selection.Name),
		Prompt:  prompt,
		Input:   stdio.In,
		Output:  stdio.Out,
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stdio.Err, "sluice:", err)
		return 1
	}
	return 0
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
