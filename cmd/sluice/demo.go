package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/printmode"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/protocol"
)

func init() {
	register("demo", "stream a scripted session from the offline demo model", demoMain)
}

// demoPrompts are the user's side of the demo session.
var demoPrompts = []string{
	"Show me what sluice does while it streams.",
	"Thanks! One more thing: how does a face catch up after a dropped connection?",
}

// demoMain runs a whole session on the demo provider and prints it live:
// reasoning, text, a Bash tool whose output streams, and a long answer.
func demoMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice demo", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var af cli.AgentFlags
	af.Register(fs)
	color := fs.Bool("color", isTerminalWriter(stdio.Out), "color the transcript")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	af.Provider = provider.Demo
	setup, err := af.Setup(os.Getenv, nil)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice demo:", err)
		return 2
	}
	opts := setup.Options
	// The demo runs only its own scripted command (a loop that prints five
	// lines); nothing else can ask for a tool. It is not kept as a session.
	opts.PermissionMode = protocol.ModeBypassPermissions
	opts.Store = nil
	sess, err := agent.New(opts)
	if err != nil {
		fmt.Fprintln(stdio.Err, "sluice demo:", err)
		return 1
	}
	defer sess.Close()
	sub := sess.Subscribe(agent.SubscribeOptions{})
	defer sub.Close()
	tr := &printmode.Transcript{W: stdio.Out, Color: *color}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Follow(context.Background(), sub)
	}()
	code := 0
	for _, p := range demoPrompts {
		if _, err := sess.Run(ctx, p); err != nil {
			fmt.Fprintln(stdio.Err, "\nsluice demo:", err)
			code = 1
			break
		}
	}
	// Closing the session (not the subscription) keeps the events not yet
	// printed readable: the transcript ends with the last of them.
	sess.Close()
	<-done
	fmt.Fprintln(stdio.Out)
	return code
}

func isTerminalWriter(w any) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
