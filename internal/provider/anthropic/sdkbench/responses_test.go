package sdkbench

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/responses"
	"github.com/sluicehq/sluice/model"
)

// BenchmarkDecodeResponses decodes the largest recorded Responses API
// stream (o3-mini: four reasoning summary parts and a long answer, 676
// events) into a whole response with the openai-responses provider's
// decoder, measured as BenchmarkDecode measures the Messages API's.
func BenchmarkDecodeResponses(b *testing.B) {
	raw, err := os.ReadFile("../../responses/testdata/reasoning_summary_parts.sse")
	if err != nil {
		b.Fatal(err)
	}
	events := bytes.Count(raw, []byte("\ndata: ")) // each after its event line
	measure(b, raw, events, func() {
		var acc model.Accumulator
		responses.DecodeStream(bytes.NewReader(raw), func(p model.Part, err error) bool {
			if err != nil {
				b.Fatal(err)
			}
			if err := acc.Add(p); err != nil {
				b.Fatal(err)
			}
			return true
		})
		if r := acc.Response(); len(r.Content) != 2 || r.Usage.OutputTokens != 1680 {
			b.Fatal("wrong response")
		}
	})
}
