package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor derives the JSON schema of a tool's input from the Go type In
// (a struct): its json tags name the properties, fields without omitempty
// or omitzero are required, and a field's jsonschema tag is its
// description:
//
//	type weatherInput struct {
//		City string `json:"city" jsonschema:"the city to report on"`
//		Days int    `json:"days,omitempty" jsonschema:"how many days ahead (default 1)"`
//	}
func SchemaFor[In any]() (json.RawMessage, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool: schema: %w", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool: schema: %w", err)
	}
	return raw, nil
}

// Func describes a tool whose input is the Go type In, for NewFunc.
type Func[In any] struct {
	// Name and Description are what the model sees. Name is required.
	Name        string
	Description string
	// Kind decides approval and scheduling (the zero value is ReadOnly).
	Kind Kind
	// Compact shows a call's input in one short line; nil shows its
	// JSON.
	Compact func(in In) string
	// Run runs one call with the decoded input. It must return promptly
	// once ctx is done (see Tool). Required.
	Run func(ctx context.Context, env *Env, in In, out Output) (Result, error)
}

// NewFunc returns f as a Tool. Its schema is derived from In (SchemaFor),
// and each call's input is checked against the schema and decoded into an
// In before f.Run sees it; input that does not fit is an error the model
// is shown, naming what is wrong.
func NewFunc[In any](f Func[In]) (Tool, error) {
	if f.Name == "" || f.Run == nil {
		return nil, errors.New("tool: NewFunc needs a Name and a Run")
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", f.Name, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", f.Name, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", f.Name, err)
	}
	return &funcTool[In]{f: f, schema: raw, resolved: resolved}, nil
}

type funcTool[In any] struct {
	f        Func[In]
	schema   json.RawMessage
	resolved *jsonschema.Resolved
}

func (t *funcTool[In]) Name() string            { return t.f.Name }
func (t *funcTool[In]) Description() string     { return t.f.Description }
func (t *funcTool[In]) Schema() json.RawMessage { return t.schema }
func (t *funcTool[In]) Kind() Kind              { return t.f.Kind }

func (t *funcTool[In]) Compact(params json.RawMessage) string {
	if t.f.Compact != nil {
		var in In
		if json.Unmarshal(params, &in) == nil {
			return t.f.Compact(in)
		}
	}
	return string(params)
}

func (t *funcTool[In]) Run(ctx context.Context, env *Env, params json.RawMessage, out Output) (Result, error) {
	in, err := t.decode(params)
	if err != nil {
		return Result{}, err
	}
	return t.f.Run(ctx, env, in, out)
}

// decode checks params against the schema, then decodes them.
func (t *funcTool[In]) decode(params json.RawMessage) (In, error) {
	var in In
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var instance any
	if err := json.Unmarshal(params, &instance); err != nil {
		return in, fmt.Errorf("%s: the input is not JSON: %w", t.f.Name, err)
	}
	if err := t.resolved.Validate(instance); err != nil {
		return in, fmt.Errorf("%s: %w", t.f.Name, err)
	}
	if err := json.Unmarshal(params, &in); err != nil {
		return in, fmt.Errorf("%s: %w", t.f.Name, err)
	}
	return in, nil
}
