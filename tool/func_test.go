package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type echoInput struct {
	Text  string   `json:"text"`
	Times int      `json:"times,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func TestNewFuncDecodesAndValidates(t *testing.T) {
	t.Parallel()
	echo, err := NewFunc(Func[echoInput]{
		Name: "Echo",
		Run: func(_ context.Context, _ *Env, in echoInput, _ Output) (Result, error) {
			return Result{Content: strings.Repeat(in.Text, max(in.Times, 1)) + strings.Join(in.Tags, ",")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, params, want, wantErr string
	}{
		{"required only", `{"text":"a"}`, "a", ""},
		{"all fields", `{"text":"a","times":3,"tags":["x","y"]}`, "aaax,y", ""},
		{"missing required", `{"times":2}`, "", "text"},
		{"wrong type", `{"text":5}`, "", "text"},
		{"unknown property", `{"text":"a","loud":true}`, "", "loud"},
		{"not an object", `"a"`, "", "Echo"},
		{"not JSON", `{`, "", "not JSON"},
		{"empty input", ``, "", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := echo.Run(context.Background(), &Env{}, json.RawMessage(tt.params), nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Run(%s): %v", tt.params, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Run(%s) error %v, want one naming %q", tt.params, err, tt.wantErr)
			case res.Content != tt.want:
				t.Fatalf("Run(%s) = %q, want %q", tt.params, res.Content, tt.want)
			}
		})
	}
}

func TestNewFuncCompactFallsBackToJSON(t *testing.T) {
	t.Parallel()
	run := func(context.Context, *Env, echoInput, Output) (Result, error) { return Result{}, nil }
	plain, _ := NewFunc(Func[echoInput]{Name: "Echo", Run: run})
	if got := plain.Compact(json.RawMessage(`{"text":"hi"}`)); got != `{"text":"hi"}` {
		t.Errorf("Compact without a Compact func = %q", got)
	}
	short, _ := NewFunc(Func[echoInput]{Name: "Echo", Run: run, Compact: func(in echoInput) string { return in.Text }})
	if got := short.Compact(json.RawMessage(`{"text":"hi"}`)); got != "hi" {
		t.Errorf("Compact = %q, want hi", got)
	}
	if got := short.Compact(json.RawMessage(`{oops`)); got != `{oops` {
		t.Errorf("Compact of bad input = %q, want it as given", got)
	}
}

func TestNewFuncNeedsNameAndRun(t *testing.T) {
	t.Parallel()
	if _, err := NewFunc(Func[echoInput]{Name: "Echo"}); err == nil {
		t.Error("NewFunc without Run: no error")
	}
	if _, err := NewFunc(Func[echoInput]{Run: func(context.Context, *Env, echoInput, Output) (Result, error) { return Result{}, nil }}); err == nil {
		t.Error("NewFunc without Name: no error")
	}
	if _, err := NewFunc(Func[chan int]{Name: "Bad", Run: func(context.Context, *Env, chan int, Output) (Result, error) { return Result{}, nil }}); err == nil {
		t.Error("NewFunc with an input that has no schema: no error")
	}
}
