package printmode

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// DefaultBackgroundWait is how long a one-prompt run waits, once answered,
// for the background commands it started.
const DefaultBackgroundWait = time.Minute

// settleTasks is the headless contract for background work: a one-prompt
// run does not report success while commands it started still run. It
// waits for them up to wait, following their taskUpdated events in the
// session's view state, then stops the rest and returns a description of
// each it stopped.
func settleTasks(ctx context.Context, sess *agent.Session, wait time.Duration) []string {
	snap, sub := sess.SnapshotAndSubscribe(agent.SubscribeOptions{})
	defer sub.Close()
	if len(snap.Tasks) == 0 {
		return nil
	}
	if wait == 0 {
		wait = DefaultBackgroundWait
	}
	list := protocol.NewList(snap)
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		for len(list.Tasks()) > 0 {
			ev, err := sub.Next(wctx)
			if err != nil {
				break
			}
			// The subscription continues its snapshot exactly: every
			// event applies.
			_ = list.Apply(ev)
		}
	}
	tasks := list.Tasks()
	if len(tasks) == 0 {
		return nil
	}
	sess.StopTasks()
	stopped := make([]string, len(tasks))
	for i, t := range tasks {
		stopped[i] = fmt.Sprintf("%s (%s)", t.TaskID, firstLine(t.Description))
	}
	return stopped
}

func firstLine(s string) string {
	s, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if more {
		s += " …"
	}
	return s
}
