// Command tuidemo runs the terminal UI against the scripted model, for the
// pseudo-terminal test (pty_test.go) and for trying the UI by hand:
//
//	go run ./internal/tui/testdata/tuidemo
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/tui"
	"github.com/sluicehq/sluice/internal/tui/internal/scripted"
)

func main() {
	delay := flag.Duration("delay", 10*time.Millisecond, "pause between two streamed chunks")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sess, err := agent.New(agent.Options{Provider: &scripted.Provider{Delay: *delay}, Model: "scripted-model"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(1)
	}
	if err := tui.Run(ctx, tui.Options{Session: sess, Models: []string{"scripted-model", "other-model"}}); err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(1)
	}
}
