package bedrock

import "strings"

// baseIDs maps the Claude API's model names to Bedrock's foundation-model
// ids (Anthropic's models overview and the Bedrock model catalogue).
var baseIDs = map[string]string{
	"claude-opus-4-6":            "anthropic.claude-opus-4-6-v1",
	"claude-sonnet-4-6":          "anthropic.claude-sonnet-4-6",
	"claude-opus-4-5":            "anthropic.claude-opus-4-5-20251101-v1:0",
	"claude-opus-4-5-20251101":   "anthropic.claude-opus-4-5-20251101-v1:0",
	"claude-sonnet-4-5":          "anthropic.claude-sonnet-4-5-20250929-v1:0",
	"claude-sonnet-4-5-20250929": "anthropic.claude-sonnet-4-5-20250929-v1:0",
	"claude-haiku-4-5":           "anthropic.claude-haiku-4-5-20251001-v1:0",
	"claude-haiku-4-5-20251001":  "anthropic.claude-haiku-4-5-20251001-v1:0",
	"claude-opus-4-1":            "anthropic.claude-opus-4-1-20250805-v1:0",
	"claude-opus-4-1-20250805":   "anthropic.claude-opus-4-1-20250805-v1:0",
	"claude-sonnet-4-0":          "anthropic.claude-sonnet-4-20250514-v1:0",
	"claude-sonnet-4-20250514":   "anthropic.claude-sonnet-4-20250514-v1:0",
	"claude-opus-4-0":            "anthropic.claude-opus-4-20250514-v1:0",
	"claude-opus-4-20250514":     "anthropic.claude-opus-4-20250514-v1:0",
}

// ModelID is the Bedrock model id for name in region. A Claude API name
// becomes the cross-region inference profile of the region's geography
// ("us.", "eu.", "apac.", "us-gov."; "global." elsewhere): Claude 4 models
// cannot be invoked on demand by their bare foundation-model id. Anything
// else — a Bedrock id, an inference profile, an ARN — is used as given.
func ModelID(name, region string) string {
	id, ok := baseIDs[name]
	if !ok {
		return name
	}
	return geography(region) + "." + id
}

func geography(region string) string {
	switch {
	case strings.HasPrefix(region, "us-gov-"):
		return "us-gov"
	case strings.HasPrefix(region, "us-"), strings.HasPrefix(region, "ca-"):
		return "us"
	case strings.HasPrefix(region, "eu-"):
		return "eu"
	case strings.HasPrefix(region, "ap-"):
		return "apac"
	}
	return "global"
}
