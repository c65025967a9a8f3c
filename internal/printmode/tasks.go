package printmode

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
)

// DefaultBackgroundWait is how long a one-prompt run waits, once answered,
// for the background commands it started.
const DefaultBackgroundWait = time.Minute

// settleTasks is the headless contract for background work: a one-prompt
// run does not report success while commands it started still run. It
// waits for them up to wait, reading the run's subscription on (tl follows
// the tasks; with w, their stream-json lines are written), then stops the
// rest and returns a description of each it stopped.
func settleTasks(ctx context.Context, stopTasks func(), sub *agent.Subscription, tl *cclines.TaskLines, w *cclines.Writer, wait time.Duration) []string {
	if len(tl.Running()) == 0 {
		return nil
	}
	if wait == 0 {
		wait = DefaultBackgroundWait
	}
	take := func(wctx context.Context) error {
		it, err := sub.NextItem(wctx)
		if err == nil && it.Event != nil {
			tl.Take(w, it.Event, time.Now)
		}
		return err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		for len(tl.Running()) > 0 {
			if take(wctx) != nil {
				break
			}
		}
	}
	tasks := tl.Running()
	if len(tasks) == 0 {
		return nil
	}
	stopTasks()
	// Their ends are published before StopTasks returns.
	for sub.Pending() > 0 {
		if take(context.Background()) != nil {
			break
		}
	}
	stopped := make([]string, len(tasks))
	for i, t := range tasks {
		stopped[i] = fmt.Sprintf("%s (%s)", t.TaskID, cclines.FirstLine(t.Description))
	}
	return stopped
}
