package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/tool"
)

func TestTodoWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, params       string
		compact, checklist string
		err                bool
	}{
		{
			name:      "a plan under way",
			params:    `{"todos":[{"content":"Read the code","status":"completed","activeForm":"Reading the code"},{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]}`,
			compact:   "1/3 done",
			checklist: "☒ Read the code\n◼ Fix the bug\n☐ Run the tests",
		},
		{name: "an emptied list", params: `{"todos":[]}`, checklist: "(the todo list is empty)"},
		{name: "an unknown status", params: `{"todos":[{"content":"x","status":"doing"}]}`, err: true},
		{name: "an item without content", params: `{"todos":[{"content":" ","status":"pending"}]}`, err: true},
		{name: "not an object", params: `[1]`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tw TodoWrite
			if got := tw.Compact(json.RawMessage(tt.params)); got != tt.compact {
				t.Errorf("Compact = %q, want %q", got, tt.compact)
			}
			res, err := tw.Run(context.Background(), &tool.Env{}, json.RawMessage(tt.params), nil)
			if tt.err {
				if !errors.Is(err, ErrInvalidParams) {
					t.Fatalf("err %v, want ErrInvalidParams", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary != tt.checklist || res.IsError || res.Content == "" {
				t.Errorf("result %+v, want checklist %q", res, tt.checklist)
			}
		})
	}
}

// The schema is valid JSON, so providers accept it.
func TestTodoWriteSchema(t *testing.T) {
	t.Parallel()
	var v map[string]any
	if err := json.Unmarshal((&TodoWrite{}).Schema(), &v); err != nil {
		t.Fatal(err)
	}
}
