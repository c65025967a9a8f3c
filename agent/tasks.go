package agent

import "github.com/sluicehq/sluice/tool"

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
