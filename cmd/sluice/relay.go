package main

import (
	"context"

	"github.com/sluicehq/sluice/internal/relay"
)

func init() {
	register("relay", "chat relay: talk to the agent from WeChat or Telegram", relayMain)
}

// relayMain is 'sluice relay'; the work is in internal/relay.
func relayMain(ctx context.Context, args []string, stdio Stdio) int {
	return relay.Main(ctx, args, stdio.In, stdio.Out, stdio.Err)
}
