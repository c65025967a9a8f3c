package openai

import "github.com/sluicehq/sluice/model"

// Catalogue is the Chat Completions models' windows and list prices,
// and those of OpenAI-compatible servers' models (DeepSeek). Cached input
// is 0.1× input.
var Catalogue = model.Catalogue{
	{Prefix: "gpt-4.1-mini", Price: model.Price{InputUSD: 0.4, OutputUSD: 1.6}},
	{Prefix: "gpt-4.1", ContextWindow: 1_047_576, Price: model.Price{InputUSD: 2, OutputUSD: 8}},
	{Prefix: "gpt-4o-mini", Price: model.Price{InputUSD: 0.15, OutputUSD: 0.6}},
	{Prefix: "gpt-4o", ContextWindow: 128_000, Price: model.Price{InputUSD: 2.5, OutputUSD: 10}},
	// The chat model's window is smaller than the other gpt-5 models';
	// its price is theirs.
	{Prefix: "gpt-5-chat", ContextWindow: 128_000},
	{Prefix: "deepseek", Price: model.Price{InputUSD: 0.28, OutputUSD: 0.42}},
}

// Offered are the model names a face offers to switch to (/model).
var Offered = []string{"gpt-4.1", "gpt-4.1-mini", "gpt-4o", "o4-mini"}

// KeyEnv are the variables the key is read from.
var KeyEnv = []string{"OPENAI_API_KEY"}
