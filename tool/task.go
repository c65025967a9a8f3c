package tool

import "time"

// Task is work a tool left running after its call returned: a command
// started in the background.
type Task struct {
	ID          string
	Description string
	Started     time.Time
	// ToolID is the id of the tool call that started it.
	ToolID string
	// Tail is the last few lines of its output so far (TaskWatcher).
	Tail string
}

// Background is implemented by a tool whose calls may leave work running
// after they return (Bash with run_in_background). The session lists that
// work (agent.Session.Tasks) and stops it when it closes, so that nothing
// a session started outlives it.
type Background interface {
	// Running lists the work still running.
	Running() []Task
	// Stop ends all of it and returns once it has ended.
	Stop()
}

// TaskWatcher is implemented by a Background tool that reports its work
// starting and ending as it happens, so that the session can publish the
// running tasks to every face (taskUpdated) instead of faces polling.
type TaskWatcher interface {
	// WatchTasks has f called when a task starts and as its output grows
	// (ended false, t.Tail its last lines), and when it ends (ended true,
	// status saying how: "exited with status 0", "killed", ...). f is
	// called from any goroutine, a task's calls in order, and an end
	// before Stop returns; it must not block.
	WatchTasks(f func(t Task, ended bool, status string))
}
