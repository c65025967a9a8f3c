package printmode

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
)

// DefaultBackgroundWait is how long a one-prompt run waits, once answered,
// for the background commands it started.
const DefaultBackgroundWait = time.Minute

// settleTasks is the headless contract for background work: a one-prompt
// run does not report success while commands it started still run. It
// waits for them up to wait (polling: the commands report no event), then
// stops the rest and returns a description of each it stopped.
func settleTasks(ctx context.Context, sess *agent.Session, wait time.Duration) []string {
	if len(sess.Tasks()) == 0 {
		return nil
	}
	if wait == 0 {
		wait = DefaultBackgroundWait
	}
	if wait > 0 {
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
	waiting:
		for len(sess.Tasks()) > 0 {
			select {
			case <-tick.C:
			case <-deadline.C:
				break waiting
			case <-ctx.Done():
				break waiting
			}
		}
	}
	tasks := sess.Tasks()
	if len(tasks) == 0 {
		return nil
	}
	sess.StopTasks()
	stopped := make([]string, len(tasks))
	for i, t := range tasks {
		stopped[i] = fmt.Sprintf("%s (%s)", t.ID, firstLine(t.Description))
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
