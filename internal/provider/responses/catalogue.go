package responses

import "github.com/sluicehq/sluice/model"

// Catalogue is OpenAI's reasoning models' windows and list prices; their
// reasoning tokens are output tokens, and cached input is 0.1× input.
var Catalogue = model.Catalogue{
	{Prefix: "gpt-5-mini", Price: model.Price{InputUSD: 0.25, OutputUSD: 2}},
	{Prefix: "gpt-5-nano", Price: model.Price{InputUSD: 0.05, OutputUSD: 0.4}},
	{Prefix: "gpt-5-pro", Price: model.Price{InputUSD: 15, OutputUSD: 120}},
	{Prefix: "gpt-5.1-codex-mini", Price: model.Price{InputUSD: 0.25, OutputUSD: 2}},
	// gpt-5, gpt-5-codex, gpt-5.1, gpt-5.1-codex
	{Prefix: "gpt-5", ContextWindow: 400_000, Price: model.Price{InputUSD: 1.25, OutputUSD: 10}},
	{Prefix: "o3-pro", Price: model.Price{InputUSD: 20, OutputUSD: 80}},
	{Prefix: "o3-mini", Price: model.Price{InputUSD: 1.1, OutputUSD: 4.4}},
	{Prefix: "o3", Price: model.Price{InputUSD: 2, OutputUSD: 8}},
	{Prefix: "o4-mini", Price: model.Price{InputUSD: 1.1, OutputUSD: 4.4}},
}

// Offered are the model names a face offers to switch to (/model).
var Offered = []string{"gpt-5", "gpt-5-mini", "gpt-5-codex", "o3", "o4-mini"}

// KeyEnv are the variables the key is read from (OpenAI's).
var KeyEnv = []string{"OPENAI_API_KEY"}
