package vertex

// ids maps the Claude API's model names to Vertex AI's model ids (Google's
// "Request predictions with Claude models" and Anthropic's Vertex AI page):
// models up to 4.5 are pinned by an @date suffix, later ones are not.
var ids = map[string]string{
	"claude-opus-4-5":            "claude-opus-4-5@20251101",
	"claude-opus-4-5-20251101":   "claude-opus-4-5@20251101",
	"claude-sonnet-4-5":          "claude-sonnet-4-5@20250929",
	"claude-sonnet-4-5-20250929": "claude-sonnet-4-5@20250929",
	"claude-haiku-4-5":           "claude-haiku-4-5@20251001",
	"claude-haiku-4-5-20251001":  "claude-haiku-4-5@20251001",
	"claude-opus-4-1":            "claude-opus-4-1@20250805",
	"claude-opus-4-1-20250805":   "claude-opus-4-1@20250805",
	"claude-sonnet-4-0":          "claude-sonnet-4@20250514",
	"claude-sonnet-4-20250514":   "claude-sonnet-4@20250514",
	"claude-opus-4-0":            "claude-opus-4@20250514",
	"claude-opus-4-20250514":     "claude-opus-4@20250514",
}

// ModelID is the Vertex AI model id for name: a Claude API name is mapped,
// anything else (claude-sonnet-4-6, an id with its @date) used as given.
func ModelID(name string) string {
	if id, ok := ids[name]; ok {
		return id
	}
	return name
}
