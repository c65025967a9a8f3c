// Package sdkbench holds only benchmarks: the anthropic provider's stream
// decoding side by side with anthropic-sdk-go's over the same recorded
// bytes, and the same stream in Amazon Bedrock's event-stream framing
// (bedrock provider against the SDK's Bedrock option), and, beside them,
// the gemini provider's decoding of a recorded Gemini stream and the
// openai-responses provider's of a recorded Responses API stream
// (BenchmarkDecodeResponses). It is a package of
// its own so that the providers' tests do not link the SDK.
//
//	go test -run '^$' -bench . -count 8 ./internal/provider/anthropic/sdkbench
package sdkbench
