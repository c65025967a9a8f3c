package sdkbench

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/gemini"
	"github.com/sluicehq/sluice/model"
)

// BenchmarkDecodeGemini decodes the largest recorded Gemini stream (thought
// summaries, then text with its thoughtSignature) into a whole message
// with the gemini provider's decoder, measured as the SSE and Bedrock
// decodes are.
func BenchmarkDecodeGemini(b *testing.B) {
	raw, err := os.ReadFile("../../gemini/testdata/flash_thoughts_stop_sequence.sse")
	if err != nil {
		b.Fatal(err)
	}
	events := bytes.Count(raw, []byte("data: "))
	wrap := func(e *model.APIError) error { return e }
	measure(b, raw, events, func() {
		var acc model.Accumulator
		gemini.DecodeEvents(bytes.NewReader(raw), 0, "gemini", wrap, func(p model.Part, err error) bool {
			if err != nil {
				b.Fatal(err)
			}
			if err := acc.Add(p); err != nil {
				b.Fatal(err)
			}
			return true
		})
		if r := acc.Response(); len(r.Content) != 2 || r.Content[1].Signature == "" {
			b.Fatal("wrong message")
		}
	})
}
