// Package sdkbench holds only a benchmark: the anthropic provider's stream
// decoding side by side with anthropic-sdk-go's over the same recorded
// bytes. It is a package of its own so that the provider's tests do not
// link the SDK.
//
//	go test -run '^$' -bench . -count 8 ./internal/provider/anthropic/sdkbench
package sdkbench
