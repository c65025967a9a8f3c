// Command sluice is an agent runtime whose streaming is right by
// construction: a terminal agent (sluice, sluice -p), a host protocol
// (sluice rpc, sluice serve), a chat relay (sluice relay) and a demo.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. It returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdio Stdio) int
}

// Stdio is where a command reads and writes.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

var commands = map[string]command{}

// register adds a subcommand; each face registers its own from its own file.
func register(name, summary string, run func(ctx context.Context, args []string, stdio Stdio) int) {
	if _, dup := commands[name]; dup {
		panic("sluice: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

func main() {
	os.Exit(run(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

func run(args []string, stdio Stdio) int {
	// A closed terminal or a dropped SSH session (SIGHUP) ends sluice as
	// SIGTERM does: the run is aborted, what streamed is saved, tools stop.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "--help":
			if c, ok := commands[""]; ok {
				// The agent's own usage: the commands, then its flags.
				c.run(ctx, []string{"-h"}, Stdio{In: stdio.In, Out: stdio.Out, Err: stdio.Out})
				return 0
			}
			usage(stdio.Out)
			return 0
		}
		if c, ok := commands[args[0]]; ok {
			return c.run(ctx, args[1:], stdio)
		}
	}
	// No subcommand: the agent itself (interactive, or print mode with -p).
	c, ok := commands[""]
	if !ok {
		fmt.Fprintln(stdio.Err, "sluice: the agent is not built into this binary")
		return 2
	}
	return c.run(ctx, args, stdio)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sluice [flags] [prompt]      interactive agent (-p for print mode)")
	fmt.Fprintln(w, "       sluice <command> [flags]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice <command> -h' for a command's flags.")
}
