package gemini

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
)

// The request carries the key only in x-goog-api-key, the model in the
// path, and the conversation as Gemini wants it: roles user and model,
// every signature on the part it came with, function responses named
// after their calls (with the server's ids, none for made-up ones), before
// the user's text.
func TestRequest(t *testing.T) {
	t.Parallel()
	var body map[string]any
	var header http.Header
	var path, query string
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		header, path, query = r.Header, r.URL.Path, r.URL.RawQuery
		json.NewDecoder(r.Body).Decode(&body)
		ok(w, r)
	})
	req := &model.Request{
		Model: "gemini-3-pro-preview", System: "be brief", MaxTokens: 500, ThinkingBudget: 1024,
		Tools: []model.Tool{
			{Name: "Bash", Description: "run", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"command":{"type":"string","description":"what to run"},"timeout":{"type":["integer","null"]}},"required":["command","gone"],"additionalProperties":false}`)},
			{Name: "now", Description: "the time", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Content{text("list", ""), text("files", "")}},
			{Role: model.RoleAssistant, Content: []model.Content{
				reasoning("unsigned summary", ""), reasoning("signed", "rsig"), text("Sure", ""),
				{Type: model.ContentRaw, Raw: json.RawMessage(`{"type":"server_tool_use"}`)},
				tool("c1", "Bash", `{"command":"ls"}`, "fsig"), tool("gemini_call_r1_2", "now", ``, ""),
			}},
			{Role: model.RoleUser, Content: []model.Content{
				text("thanks", ""),
				{Type: model.ContentToolResult, ID: "c1", Text: "a\nb"},
				{Type: model.ContentToolResult, ID: "gemini_call_r1_2", Text: "boom", IsError: true},
			}},
			{Role: model.RoleAssistant, Content: []model.Content{text("", "endsig")}},
			{Role: model.RoleUser, Content: []model.Content{text("what is this?", ""), {Type: model.ContentImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			{Role: model.RoleUser, Content: []model.Content{text("and this", "")}},
		},
	}
	if _, err := pt.Attempt(t, p, req); err != nil {
		t.Fatal(err)
	}
	if header.Get("x-goog-api-key") != apiKey || header.Get("Authorization") != "" || path != "/v1beta/models/gemini-3-pro-preview:streamGenerateContent" || query != "alt=sse" {
		t.Fatalf("path %s?%s headers %v", path, query, header)
	}
	want := `{
		"systemInstruction":{"parts":[{"text":"be brief"}]},
		"tools":[{"functionDeclarations":[
			{"name":"Bash","description":"run","parameters":{"type":"OBJECT","properties":{"command":{"type":"STRING","description":"what to run"},"timeout":{"type":"INTEGER","nullable":true}},"required":["command"]}},
			{"name":"now","description":"the time"}]}],
		"generationConfig":{"maxOutputTokens":500,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}},
		"contents":[
			{"role":"user","parts":[{"text":"list"},{"text":"files"}]},
			{"role":"model","parts":[
				{"text":"signed","thought":true,"thoughtSignature":"rsig"},
				{"text":"Sure"},
				{"functionCall":{"id":"c1","name":"Bash","args":{"command":"ls"}},"thoughtSignature":"fsig"},
				{"functionCall":{"name":"now","args":{}}}]},
			{"role":"user","parts":[
				{"functionResponse":{"id":"c1","name":"Bash","response":{"output":"a\nb"}}},
				{"functionResponse":{"name":"now","response":{"error":"boom"}}},
				{"text":"thanks"}]},
			{"role":"model","parts":[{"text":"","thoughtSignature":"endsig"}]},
			{"role":"user","parts":[{"text":"what is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},{"text":"and this"}]}]}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body, wantBody) {
		got, _ := json.Marshal(body)
		t.Fatalf("body:\n%s", got)
	}
}

func TestGenerationConfig(t *testing.T) {
	t.Parallel()
	budget := func(n int) *int { return &n }
	tests := []struct {
		name  string
		model string
		req   model.Request
		want  *genConfig
	}{
		{"thoughts always shown", "gemini-2.5-pro", model.Request{}, &genConfig{ThinkingConfig: &thinkingConfig{IncludeThoughts: true}}},
		{"budget", "gemini-2.5-flash", model.Request{ThinkingBudget: 2048, MaxTokens: 9}, &genConfig{MaxOutputTokens: 9, ThinkingConfig: &thinkingConfig{IncludeThoughts: true, ThinkingBudget: budget(2048)}}},
		{"adaptive is dynamic", "gemini-2.5-flash", model.Request{AdaptiveThinking: true}, &genConfig{ThinkingConfig: &thinkingConfig{IncludeThoughts: true, ThinkingBudget: budget(-1)}}},
		{"effort is Gemini 3's level", "gemini-3-pro-preview", model.Request{Effort: "max"}, &genConfig{ThinkingConfig: &thinkingConfig{IncludeThoughts: true, ThinkingLevel: "high"}}},
		{"effort low", "models/gemini-3-flash", model.Request{Effort: "low"}, &genConfig{ThinkingConfig: &thinkingConfig{IncludeThoughts: true, ThinkingLevel: "low"}}},
		{"no thinking before 2.5", "gemini-2.0-flash", model.Request{ThinkingBudget: 100, MaxTokens: 5}, &genConfig{MaxOutputTokens: 5}},
		{"nothing to say", "gemini-1.5-pro", model.Request{}, nil},
	}
	for _, tt := range tests {
		if got := generationConfig(&tt.req, tt.model); !reflect.DeepEqual(got, tt.want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			t.Errorf("%s: %s, want %s", tt.name, g, w)
		}
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"keywords Gemini refuses dropped", `{"$schema":"x","type":"object","additionalProperties":false,"properties":{"u":{"type":"string","format":"uri","minLength":1},"d":{"type":"string","format":"date-time"}}}`,
			`{"type":"OBJECT","properties":{"u":{"type":"STRING","minLength":1},"d":{"type":"STRING","format":"date-time"}}}`},
		{"refs expanded, const an enum, oneOf anyOf", `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"}}}},"properties":{"p":{"$ref":"#/$defs/P","description":"a point"},"k":{"const":"on"},"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"type":"OBJECT","properties":{"p":{"type":"OBJECT","description":"a point","properties":{"x":{"type":"NUMBER"}}},"k":{"type":"STRING","enum":["on"]},"v":{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}]}}}`},
		{"nullable from anyOf with null", `{"type":"object","properties":{"n":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			`{"type":"OBJECT","properties":{"n":{"type":"STRING","nullable":true}}}`},
		{"arrays get items, enums of other values dropped", `{"type":"object","properties":{"a":{"type":"array"},"e":{"type":"integer","enum":[1,2]}}}`,
			`{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"STRING"}},"e":{"type":"INTEGER"}}}`},
		{"recursive ref bounded", `{"type":"object","definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}},"properties":{"n":{"$ref":"#/definitions/N"}}}`, ""},
	}
	for _, tt := range tests {
		got, err := Schema(json.RawMessage(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.want == "" {
			if _, err := json.Marshal(got); err != nil || got == nil {
				t.Errorf("%s: %v %v", tt.name, got, err)
			}
			continue
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			t.Errorf("%s:\n got %s\nwant %s", tt.name, g, tt.want)
		}
	}
	if got, err := Schema(json.RawMessage(`{"type":"object"}`)); got != nil || err != nil {
		t.Fatalf("no parameters: %v %v", got, err)
	}
}

func TestRequestRefusesBadToolInput(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.Content{tool("c", "f", `[1]`, "")}}}}
	if _, err := Body(req, "gemini-2.5-pro"); !errors.Is(err, model.ErrInvalidRequest) {
		t.Fatalf("err = %v", err)
	}
}
