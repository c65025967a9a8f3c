package provider

import (
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/provider/gemini"
	"github.com/sluicehq/sluice/internal/provider/openai"
	"github.com/sluicehq/sluice/internal/provider/responses"
	"github.com/sluicehq/sluice/model"
)

// facts are what a provider states about itself, from its own package.
type facts struct {
	name string
	// offered are the model names a face offers (/model).
	offered []string
	// keyEnv are the variables its key is read from, in order; none for
	// the clouds (their own credential chains) and the demo.
	keyEnv []string
	// catalogue holds its models' windows and prices.
	catalogue model.Catalogue
	// open builds it.
	open opener
	// detect says how strongly the environment asks for it when no
	// provider is named (nil: only when named).
	detect detector
}

// detector ranks a provider for an environment: 0 when it does not ask
// for it. Open picks the highest rank, the first registered among equals.
type detector func(getenv func(string) string) int

// The ranks: a variable that chooses a platform outright (Claude Code's
// CLAUDE_CODE_USE_BEDROCK) beats a key, which beats a base URL alone.
const (
	chosen  = 3
	keyed   = 2
	pointed = 1
)

// when ranks a provider rank when any of the variables is set.
func when(rank int, vars ...string) detector {
	return func(getenv func(string) string) int {
		for _, v := range vars {
			if getenv(v) != "" {
				return rank
			}
		}
		return 0
	}
}

// either is the higher of two ranks.
func either(a, b detector) detector {
	return func(getenv func(string) string) int { return max(a(getenv), b(getenv)) }
}

// wire sends an OpenAI-style environment to the Responses provider when
// OPENAI_WIRE_API says responses, to the chat provider otherwise.
func wire(responses bool, d detector) detector {
	return func(getenv func(string) string) int {
		if strings.EqualFold(strings.TrimSpace(getenv("OPENAI_WIRE_API")), "responses") != responses {
			return 0
		}
		return d(getenv)
	}
}

// flag ranks a provider chosen when a variable is true.
func flag(name string) detector {
	return func(getenv func(string) string) int {
		if truthy(getenv(name)) {
			return chosen
		}
		return 0
	}
}

var openAIEnv = either(when(keyed, "OPENAI_API_KEY"), when(pointed, "OPENAI_BASE_URL"))

// registered is every provider, one line each (its facts and how it is
// opened), in the order help texts
// name them. Bedrock and Vertex serve Anthropic's models; their model ids
// are priced by Anthropic's catalogue where the names match.
var registered = []facts{
	{Anthropic, anthropic.Offered, anthropic.KeyEnv, anthropic.Catalogue, openAnthropic,
		either(when(keyed, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), when(pointed, "ANTHROPIC_BASE_URL"))},
	{OpenAI, openai.Offered, openai.KeyEnv, openai.Catalogue, openOpenAI, wire(false, openAIEnv)},
	{OpenAIResponses, responses.Offered, responses.KeyEnv, responses.Catalogue, openResponses, wire(true, openAIEnv)},
	{Bedrock, anthropic.Offered, nil, nil, openBedrock, flag("CLAUDE_CODE_USE_BEDROCK")},
	{Vertex, anthropic.Offered, nil, nil, openVertex, flag("CLAUDE_CODE_USE_VERTEX")},
	{Gemini, gemini.Offered, gemini.KeyEnv, gemini.Catalogue, openGemini, when(keyed, "GEMINI_API_KEY", "GOOGLE_API_KEY")},
	{Demo, []string{"demo"}, nil, nil, openDemo, nil},
}

// Names lists the providers Open knows, for every help text.
var Names = func() []string {
	out := make([]string, len(registered))
	for i, f := range registered {
		out[i] = f.name
	}
	return out
}()

// Catalogue is every provider's models' context windows and list prices,
// in one table: agent.Options.Catalogue of every face. A model is looked
// up by name whichever provider serves it (an OpenAI-compatible gateway's
// claude-sonnet is priced as Anthropic's).
var Catalogue = func() model.Catalogue {
	var out model.Catalogue
	for _, f := range registered {
		out = slices.Concat(out, f.catalogue)
	}
	return out
}()

func lookup(name string) (facts, bool) {
	i := slices.IndexFunc(registered, func(f facts) bool { return f.name == name })
	if i < 0 {
		return facts{}, false
	}
	return registered[i], true
}

// Models lists well-known model names of a provider, for a face to offer
// (/model); any other name the provider accepts works too.
func Models(name string) []string {
	f, _ := lookup(name)
	return f.offered
}

// APIKeySource names the variable the selected provider's key came from,
// never the key: "none" when it takes none from the environment.
func (s *Selection) APIKeySource(getenv func(string) string) string {
	f, _ := lookup(s.Name)
	for _, k := range f.keyEnv {
		if getenv(k) != "" {
			return k
		}
	}
	return "none"
}

// detected is the provider the environment asks for, "" when none does.
func detected(getenv func(string) string) string {
	name, best := "", 0
	for _, f := range registered {
		if f.detect == nil {
			continue
		}
		if r := f.detect(getenv); r > best {
			name, best = f.name, r
		}
	}
	return name
}
