package cclines

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/protocol"
)

// TaskLines holds print mode's reduced list of the session, fed by the
// run's subscription (every event of it goes through take): the one view
// state the process keeps beside the agent's, whose text it shares. The
// stream-json Translator writes finished blocks from it (blockContent).
// It follows the background commands in it and writes Claude Code's
// stream-json lines for them (task_type local_bash):
// background_tasks_changed (the whole set) and task_started when one
// starts; task_updated, task_notification and background_tasks_changed
// when one ends. Safe for concurrent use.
type TaskLines struct {
	mu   sync.Mutex
	list protocol.List
}

// Reset starts from the snapshot the subscription was taken with.
func (tl *TaskLines) Reset(snap protocol.Snapshot) {
	tl.mu.Lock()
	tl.list.Reset(snap)
	tl.mu.Unlock()
}

// blockContent is the content of block b of message id (a subagent's
// too), "" when there is none.
func (tl *TaskLines) blockContent(id string, b int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.list.BlockContent(id, b)
}

// Running lists the tasks running.
func (tl *TaskLines) Running() []protocol.Task {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.list.Tasks()
}

// Take applies ev and, with w, writes the lines it calls for; now is
// read only for a line that says when (a task's end).
func (tl *TaskLines) Take(w *Writer, ev protocol.Event, now func() time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	e, isTask := ev.(protocol.TaskUpdated)
	held := isTask && tl.holds(e.TaskID)
	// The subscription continues its snapshot exactly: every event applies.
	_ = tl.list.Apply(ev)
	if !isTask || w == nil {
		return
	}
	set := func() {
		tasks := []streamjson.BackgroundTask{}
		for _, t := range tl.list.Tasks() {
			tasks = append(tasks, streamjson.BackgroundTask{TaskID: t.TaskID, TaskType: "local_bash", Description: t.Description})
		}
		w.Line(streamjson.BackgroundTasksLine{Type: "system", Subtype: "background_tasks_changed", Tasks: tasks, UUID: uuid.NewString(), SessionID: w.session})
	}
	switch {
	case e.State == protocol.TaskRunning && !held:
		set()
		w.Line(streamjson.BashTaskStartedLine{
			Type: "system", Subtype: "task_started", TaskID: e.TaskID, ToolUseID: e.ToolID,
			Description: e.Description, IsBackgrounded: true, TaskType: "local_bash",
			UUID: uuid.NewString(), SessionID: w.session,
		})
	case e.State == protocol.TaskEnded && held:
		status, how := taskStatus(e.Status)
		w.Line(streamjson.TaskUpdatedLine{Type: "system", Subtype: "task_updated", TaskID: e.TaskID,
			Patch: streamjson.TaskPatch{Status: status, EndTime: now().UnixMilli()}, UUID: uuid.NewString(), SessionID: w.session})
		w.Line(streamjson.BashTaskNotificationLine{
			Type: "system", Subtype: "task_notification", TaskID: e.TaskID, ToolUseID: e.ToolID, Status: status,
			Summary: fmt.Sprintf("Background command %q %s", FirstLine(e.Description), how),
			UUID:    uuid.NewString(), SessionID: w.session,
		})
		set()
	}
}

func (tl *TaskLines) holds(id string) bool {
	for _, t := range tl.list.Tasks() {
		if t.TaskID == id {
			return true
		}
	}
	return false
}

// taskStatus is Claude Code's status of a task that ended as sluice's
// status says, and how it says it.
func taskStatus(s string) (status, how string) {
	switch {
	case s == "exited with status 0":
		return "completed", "completed (exit code 0)"
	case s == "killed":
		return "stopped", "was stopped"
	case strings.HasPrefix(s, "exited: exit status "):
		return "failed", "failed (exit code " + strings.TrimPrefix(s, "exited: exit status ") + ")"
	}
	return "failed", "failed: " + s
}

// FirstLine is the first line of s, trimmed, with " …" when more follows.
func FirstLine(s string) string {
	s, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if more {
		s += " …"
	}
	return s
}
