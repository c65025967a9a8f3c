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

	"github.com/sluicehq/sluice/internal/cli"
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
		case "help":
			return help(ctx, args[1:], stdio)
		case "-h", "--help":
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

// help is `sluice help [topic]`: the commands and faces, a command's
// flags, or the Claude Code flags that are accepted and ignored.
func help(ctx context.Context, args []string, stdio Stdio) int {
	if len(args) == 0 {
		usage(stdio.Out)
		return 0
	}
	switch topic := args[0]; {
	case topic == "claude-flags":
		cli.ClaudeFlagsHelp(stdio.Out)
		return 0
	case topic == "agent" || topic == "flags":
		topic = ""
		fallthrough
	default:
		if c, ok := commands[topic]; ok {
			c.run(ctx, []string{"-h"}, Stdio{In: stdio.In, Out: stdio.Out, Err: stdio.Out})
			return 0
		}
		fmt.Fprintf(stdio.Err, "sluice help: no help topic %q\n", topic)
		usage(stdio.Err)
		return 2
	}
}

// usage is the short help: what sluice is, its faces and where to read
// more.
func usage(w io.Writer) {
	fmt.Fprintln(w, "sluice: one agent for the terminal, a web page, editors and chat.")
	fmt.Fprintln(w, "\nUsage:")
	fmt.Fprintln(w, "  sluice [flags] [prompt]       the agent in this terminal")
	fmt.Fprintln(w, "  sluice -p [flags] prompt      print mode: answer and exit (text, json or stream-json)")
	fmt.Fprintln(w, "  sluice <command> [flags]      another face of the same agent:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "    %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nWithout a model's API key in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...),")
	fmt.Fprintln(w, "sluice answers with its offline demo model.")
	fmt.Fprintln(w, "\nMore help:")
	fmt.Fprintln(w, "  sluice -h                   the agent's flags, by group")
	fmt.Fprintln(w, "  sluice <command> -h         a command's flags")
	fmt.Fprintln(w, "  sluice help claude-flags    Claude Code flags accepted and ignored")
}
