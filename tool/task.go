package tool

import "time"

// Task is work a tool left running after its call returned: a command
// started in the background.
type Task struct {
	ID          string
	Description string
	Started     time.Time
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
