package printmode

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sluicehq/sluice/tool"
)

// structuredOutput is the tool through which the model gives a structured
// answer (--json-schema, or initialize's jsonSchema), as Claude Code's
// StructuredOutput: its input schema is the host's; its call ends the run,
// and its input becomes the result's structured_output, and as JSON text
// the result (testdata/claude-code/structured_output.json).
type structuredOutput struct {
	schema json.RawMessage

	mu   sync.Mutex
	last json.RawMessage
}

const structuredOutputName = "StructuredOutput"

func (t *structuredOutput) Name() string { return structuredOutputName }
func (t *structuredOutput) Description() string {
	return "Give the final answer as structured data matching the input schema. Call this exactly once, when the answer is ready."
}
func (t *structuredOutput) Schema() json.RawMessage        { return t.schema }
func (t *structuredOutput) Kind() tool.Kind                { return tool.ReadOnly }
func (t *structuredOutput) Compact(json.RawMessage) string { return "" }

func (t *structuredOutput) Run(_ context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	t.mu.Lock()
	t.last = append(json.RawMessage(nil), params...)
	t.mu.Unlock()
	// The answer is given: the run ends, as Claude Code's does.
	return tool.Result{Content: "Structured output provided successfully", Summary: "structured output given", EndsRun: true}, nil
}

// take returns the last structured answer and forgets it, so that each
// turn's result carries its own.
func (t *structuredOutput) take() json.RawMessage {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.last
	t.last = nil
	return v
}
