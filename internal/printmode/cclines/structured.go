package cclines

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sluicehq/sluice/tool"
)

// StructuredOutput is the tool through which the model gives a structured
// answer (--json-schema, or initialize's jsonSchema), as Claude Code's
// StructuredOutput: its input schema is the host's; its call ends the run,
// and its input becomes the result's structured_output, and as JSON text
// the result (testdata/claude-code/structured_output.json).
type StructuredOutput struct {
	schema json.RawMessage

	mu   sync.Mutex
	last json.RawMessage
}

// NewStructuredOutput returns the tool for answers that match schema.
func NewStructuredOutput(schema json.RawMessage) *StructuredOutput {
	return &StructuredOutput{schema: schema}
}

const structuredOutputName = "StructuredOutput"

func (t *StructuredOutput) Name() string { return structuredOutputName }
func (t *StructuredOutput) Description() string {
	return "Give the final answer as structured data matching the input schema. Call this exactly once, when the answer is ready."
}
func (t *StructuredOutput) Schema() json.RawMessage        { return t.schema }
func (t *StructuredOutput) Kind() tool.Kind                { return tool.ReadOnly }
func (t *StructuredOutput) Compact(json.RawMessage) string { return "" }

func (t *StructuredOutput) Run(_ context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	t.mu.Lock()
	t.last = append(json.RawMessage(nil), params...)
	t.mu.Unlock()
	// The answer is given: the run ends, as Claude Code's does.
	return tool.Result{Content: "Structured output provided successfully", Summary: "structured output given", EndsRun: true}, nil
}

// Take returns the last structured answer and forgets it, so that each
// turn's result carries its own.
func (t *StructuredOutput) Take() json.RawMessage {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.last
	t.last = nil
	return v
}
