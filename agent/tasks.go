package agent

import (
	"time"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// watchTasks has the tools that report their tasks publish them as
// taskUpdated, so every face lists the running tasks from the view state.
func (s *Session) watchTasks() {
	for _, t := range s.tools {
		if w, ok := t.(tool.TaskWatcher); ok {
			w.WatchTasks(func(t tool.Task, ended bool, status string) {
				ev := protocol.TaskUpdated{
					Task:  protocol.Task{TaskID: t.ID, Description: t.Description, StartedAt: t.Started.UnixMilli(), ToolID: t.ToolID, ShortResult: t.Tail},
					State: protocol.TaskRunning,
				}
				if ended {
					ev.State, ev.Status = protocol.TaskEnded, status
				}
				s.publish(ev)
			})
		}
	}
}

// Tasks lists the work the session's tools left running after their calls
// returned (commands run with Bash run_in_background), oldest first within
// each tool.
//
// The work of a tool that reports it (tool.TaskWatcher: Bash) is read from
// the session's view state, as every face reads it: a task is listed from
// the publication of its start to that of its end, so that what a face did
// on the end (print mode's result, written once the last end is in) agrees
// with Tasks at once, whenever the tool's goroutine that reported the end
// gets to run again. The work of a tool that does not report it has no
// events and is read from the tool.
func (s *Session) Tasks() []tool.Task {
	s.bus.mu.Lock()
	viewed := s.bus.list.Tasks()
	s.bus.mu.Unlock()
	tasks := make([]tool.Task, 0, len(viewed))
	for _, t := range viewed {
		tasks = append(tasks, tool.Task{ID: t.TaskID, Description: t.Description, Started: time.UnixMilli(t.StartedAt), ToolID: t.ToolID, Tail: t.ShortResult})
	}
	for _, t := range s.tools {
		if _, watched := t.(tool.TaskWatcher); watched {
			continue
		}
		if b, ok := t.(tool.Background); ok {
			tasks = append(tasks, b.Running()...)
		}
	}
	return tasks
}

// StopTasks ends the work Tasks lists and returns once it has ended. Close
// calls it, so nothing a session started outlives the session.
func (s *Session) StopTasks() {
	for _, t := range s.tools {
		if b, ok := t.(tool.Background); ok {
			b.Stop()
		}
	}
}
