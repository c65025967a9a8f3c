package provider

import (
	"slices"

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
}

// registered is every provider, one line each, in the order help texts
// name them. Bedrock and Vertex serve Anthropic's models; their model ids
// are priced by Anthropic's catalogue where the names match.
var registered = []facts{
	{Anthropic, anthropic.Offered, anthropic.KeyEnv, anthropic.Catalogue},
	{OpenAI, openai.Offered, openai.KeyEnv, openai.Catalogue},
	{OpenAIResponses, responses.Offered, responses.KeyEnv, responses.Catalogue},
	{Bedrock, anthropic.Offered, nil, nil},
	{Vertex, anthropic.Offered, nil, nil},
	{Gemini, gemini.Offered, gemini.KeyEnv, gemini.Catalogue},
	{Demo, []string{"demo"}, nil, nil},
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
