// Package toolstest holds hooks for tests of what uses the built-in tools.
package toolstest

import (
	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/tool"
)

// HeldBash is a Bash tool whose background commands, once each reported
// its end (the session published it), wait for the test before the tool
// is done with them (before Stop may return). On a loaded machine the
// scheduler opens that window at random; a test holds it open to see what
// a reader of the session sees in it.
type HeldBash struct {
	*tools.Bash
	// Ended receives each task whose end was just reported; its command
	// then waits for Release to be closed.
	Ended chan tool.Task
	// Release, once closed, lets every held command go on.
	Release chan struct{}
}

// HoldEnds returns a HeldBash over a Bash with shells of its own.
func HoldEnds() *HeldBash {
	return &HeldBash{Bash: &tools.Bash{Shells: &tools.Shells{}}, Ended: make(chan tool.Task), Release: make(chan struct{})}
}

// WatchTasks implements tool.TaskWatcher: f is called as the Bash calls
// it, and an end is then held until Release.
func (b *HeldBash) WatchTasks(f func(t tool.Task, ended bool, status string)) {
	b.Bash.WatchTasks(func(t tool.Task, ended bool, status string) {
		f(t, ended, status)
		if !ended {
			return
		}
		select {
		case b.Ended <- t:
		case <-b.Release: // a test that stopped reading Ended
		}
		<-b.Release
	})
}
