package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/tool"
)

// weatherInput is the custom tool's input; its schema is derived from it.
type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
	Days int    `json:"days,omitempty" jsonschema:"how many days ahead (default 1)"`
}

// A custom tool: a Go function with a typed input. Add it to a session
// with agent.Options.ExtraTools.
func ExampleNewFunc() {
	weather, err := tool.NewFunc(tool.Func[weatherInput]{
		Name:        "Weather",
		Description: "Reports the weather forecast for a city.",
		Kind:        tool.ReadOnly,
		Compact:     func(in weatherInput) string { return in.City },
		Run: func(ctx context.Context, env *tool.Env, in weatherInput, out tool.Output) (tool.Result, error) {
			days := max(in.Days, 1)
			fmt.Fprintf(out, "looking up %s\n", in.City) // streams to every face
			return tool.Result{Content: fmt.Sprintf("%s: sunny for %d day(s)", in.City, days)}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(weather.Schema()))

	params := json.RawMessage(`{"city":"Lisbon","days":2}`)
	fmt.Println(weather.Compact(params))
	var out strings.Builder
	res, err := weather.Run(context.Background(), &tool.Env{}, params, &out)
	fmt.Println(res.Content, err)
	fmt.Print(out.String())

	_, err = weather.Run(context.Background(), &tool.Env{}, json.RawMessage(`{"days":2}`), &out)
	fmt.Println(err != nil)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to report on"},"days":{"type":"integer","description":"how many days ahead (default 1)"}},"required":["city"],"additionalProperties":false}
	// Lisbon
	// Lisbon: sunny for 2 day(s) <nil>
	// looking up Lisbon
	// true
}

func ExampleSchemaFor() {
	type readInput struct {
		Path  string `json:"path" jsonschema:"the file to read"`
		Limit int    `json:"limit,omitempty"`
	}
	schema, err := tool.SchemaFor[readInput]()
	fmt.Println(string(schema), err)
	// Output:
	// {"type":"object","properties":{"path":{"type":"string","description":"the file to read"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false} <nil>
}
