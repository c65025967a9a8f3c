package acp

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// BenchmarkDeltaToUpdate measures the latency from a model text delta to
// its agent_message_chunk arriving at an ACP client: one op releases one
// delta from the scripted model and waits until the Go SDK client has
// decoded its session/update. It covers the agent (reducer, bus), this
// face's translation, the SDK's JSON encoding, the pipe and the client's
// decoding.
// It also reports the bytes of each chunk update on the wire.
func BenchmarkDeltaToUpdate(b *testing.B) {
	const token = "tok " // a typical model delta
	gates := make([]chan struct{}, b.N)
	steps := modeltest.Response(modeltest.Start("m1"), []modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockText}}})
	for i := range gates {
		gates[i] = make(chan struct{})
		steps = append(steps, modeltest.Gate(gates[i])...)
		steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: token}})
	}
	steps = append(steps, modeltest.Step{Part: model.Part{Type: model.PartBlockStop, Index: 0}})
	steps = append(steps, modeltest.Stop("end_turn")...)
	h := newHarness(b, modeltest.NewScript(steps), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	done := make(chan error, 1)
	go func() {
		_, err := h.prompt(sess.SessionId, "go")
		done <- err
	}()
	c := h.client
	seen := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.chunks
	}
	b.ResetTimer()
	for i := range b.N {
		close(gates[i])
		for seen() < i+1 {
			<-c.notify
		}
	}
	b.StopTimer()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	h.out.mu.Lock()
	n, bytes := 0, 0
	for _, l := range h.out.lines {
		if strings.Contains(l, `"agent_message_chunk"`) {
			n++
			bytes += len(l)
		}
	}
	h.out.mu.Unlock()
	if n > 0 {
		b.ReportMetric(float64(bytes)/float64(n), "bytes/update")
	}
}
