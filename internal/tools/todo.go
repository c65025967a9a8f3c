package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/tool"
)

// TodoWrite is the model's plan: it replaces the session's todo list with
// the one given, in Claude Code's input shape. The list lives in the tool
// call itself — its parameters and its summary — so every face shows the
// latest plan from the reduced state without keeping one of its own: the
// summary is the checklist, and the ACP face turns the parameters into
// `plan` updates.
type TodoWrite struct{}

// Todo is one item of a TodoWrite call.
type Todo struct {
	Content    string     `json:"content"`
	Status     TodoStatus `json:"status"`
	ActiveForm string     `json:"activeForm,omitempty"`
}

// TodoStatus is where an item stands.
type TodoStatus string

// The statuses of a todo item.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todos decodes a TodoWrite call's parameters.
func Todos(params json.RawMessage) ([]Todo, error) {
	var in struct {
		Todos []Todo `json:"todos"`
	}
	if err := decode(params, &in); err != nil {
		return nil, err
	}
	for i, t := range in.Todos {
		if strings.TrimSpace(t.Content) == "" {
			return nil, fmt.Errorf("%w: todo %d has no content", ErrInvalidParams, i+1)
		}
		switch t.Status {
		case TodoPending, TodoInProgress, TodoCompleted:
		default:
			return nil, fmt.Errorf("%w: todo %d: status %q (want pending, in_progress or completed)", ErrInvalidParams, i+1, t.Status)
		}
	}
	return in.Todos, nil
}

// Name implements tool.Tool.
func (*TodoWrite) Name() string { return "TodoWrite" }

// Kind implements tool.Tool: a plan changes nothing in the world.
func (*TodoWrite) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*TodoWrite) Description() string {
	return `Keeps a todo list for the current task, shown to the user as your plan.

- Use it for work of three or more steps, or when the user gives several tasks; skip it for a single simple step.
- Each call replaces the whole list: send every item with its status (pending, in_progress, completed).
- Keep exactly one item in_progress while you work; mark an item completed as soon as it is done, not in batches.
- content says what to do ("Run the tests"); activeForm says it while it happens ("Running the tests").`
}

// Schema implements tool.Tool.
func (*TodoWrite) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The updated todo list",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "activeForm": {"type": "string", "minLength": 1}
        },
        "required": ["content", "status", "activeForm"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: how far the plan has got.
func (*TodoWrite) Compact(params json.RawMessage) string {
	todos, err := Todos(params)
	if err != nil || len(todos) == 0 {
		return ""
	}
	done := 0
	for _, t := range todos {
		if t.Status == TodoCompleted {
			done++
		}
	}
	return fmt.Sprintf("%d/%d done", done, len(todos))
}

// Run implements tool.Tool.
func (*TodoWrite) Run(_ context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	todos, err := Todos(params)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{
		Content: "The todo list is updated. Keep working on the tasks, and keep the list current as you go.",
		Summary: Checklist(todos),
	}, nil
}

// Checklist renders todos one per line: ☒ done, ◼ in progress, ☐ pending.
func Checklist(todos []Todo) string {
	if len(todos) == 0 {
		return "(the todo list is empty)"
	}
	var sb strings.Builder
	for i, t := range todos {
		if i > 0 {
			sb.WriteByte('\n')
		}
		mark := "☐"
		switch t.Status {
		case TodoCompleted:
			mark = "☒"
		case TodoInProgress:
			mark = "◼"
		}
		sb.WriteString(mark + " " + t.Content)
	}
	return sb.String()
}
