package agent

import (
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
func (s *Session) Tasks() []tool.Task {
	var tasks []tool.Task
	for _, t := range s.tools {
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
