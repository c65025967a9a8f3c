package anthropic

import "github.com/sluicehq/sluice/model"

// Catalogue is Anthropic's models' list prices (their windows are the
// default 200,000 tokens). Bedrock's and Vertex's Claude models are
// priced by it too where their names match.
var Catalogue = model.Catalogue{
	{Prefix: "claude-opus-4-1", Price: model.Price{InputUSD: 15, OutputUSD: 75}},
	{Prefix: "claude-opus-4-0", Price: model.Price{InputUSD: 15, OutputUSD: 75}},
	{Prefix: "claude-opus-4-2", Price: model.Price{InputUSD: 15, OutputUSD: 75}},
	{Prefix: "claude-opus", Price: model.Price{InputUSD: 5, OutputUSD: 25}},
	{Prefix: "claude-sonnet", Price: model.Price{InputUSD: 3, OutputUSD: 15}},
	{Prefix: "claude-3-7-sonnet", Price: model.Price{InputUSD: 3, OutputUSD: 15}},
	{Prefix: "claude-3-5-sonnet", Price: model.Price{InputUSD: 3, OutputUSD: 15}},
	{Prefix: "claude-haiku-4", Price: model.Price{InputUSD: 1, OutputUSD: 5}},
	{Prefix: "claude-3-5-haiku", Price: model.Price{InputUSD: 0.8, OutputUSD: 4}},
}

// Offered are the model names a face offers to switch to (/model); any
// other name the API accepts works too.
var Offered = []string{"claude-sonnet-4-6", "claude-opus-4-5", "claude-haiku-4-5"}

// KeyEnv are the variables the credential is read from, in the order
// they are tried: the API key, else a gateway's bearer token.
var KeyEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}
