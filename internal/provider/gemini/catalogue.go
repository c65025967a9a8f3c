package gemini

import "github.com/sluicehq/sluice/model"

// Catalogue is the Gemini models' windows and their list prices for
// prompts up to 200K tokens; cache reads cost 0.1× input, as for 2.5 and
// 3.
var Catalogue = model.Catalogue{
	{Prefix: "gemini-", ContextWindow: 1_048_576},
	{Prefix: "gemini-3-pro", Price: model.Price{InputUSD: 2, OutputUSD: 12}},
	{Prefix: "gemini-3-flash", Price: model.Price{InputUSD: 0.5, OutputUSD: 3}},
	{Prefix: "gemini-2.5-pro", Price: model.Price{InputUSD: 1.25, OutputUSD: 10}},
	{Prefix: "gemini-2.5-flash-lite", Price: model.Price{InputUSD: 0.1, OutputUSD: 0.4}},
	{Prefix: "gemini-2.5-flash", Price: model.Price{InputUSD: 0.3, OutputUSD: 2.5}},
	{Prefix: "gemini-2.0-flash-lite", Price: model.Price{InputUSD: 0.075, OutputUSD: 0.3}},
	{Prefix: "gemini-2.0-flash", Price: model.Price{InputUSD: 0.1, OutputUSD: 0.4}},
}

// Offered are the model names a face offers to switch to (/model).
var Offered = []string{"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview"}

// KeyEnv are the variables the key is read from, in order (the names
// Google's SDKs and Gemini CLI read).
var KeyEnv = []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}
