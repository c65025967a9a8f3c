// Package rpctest helps test hosts and servers of the host protocol: a
// scripted model provider, stream options without waits or watchdogs, and
// an in-memory pair of line connections.
package rpctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/rpc"
	"github.com/sluicehq/sluice/model"
)

// Step is one thing a scripted response does: yield a part, fail with an
// error, or wait until Gate is closed.
type Step struct {
	Part model.Part
	Err  error
	Gate chan struct{}
}

// Script is a model.Provider that answers each request with the next of
// its responses, or, when they are used up, with Respond's answer. It is
// safe for concurrent use.
type Script struct {
	mu        sync.Mutex
	responses [][]Step
	// Respond answers the requests past the scripted responses; nil
	// answers them with an error.
	Respond func(req *model.Request) []Step
}

// NewScript returns a script with the given responses.
func NewScript(responses ...[]Step) *Script { return &Script{responses: responses} }

func (p *Script) Name() string { return "scripted" }

func (p *Script) next(req *model.Request) ([]Step, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.responses) > 0 {
		r := p.responses[0]
		p.responses = p.responses[1:]
		return r, nil
	}
	if p.Respond != nil {
		return p.Respond(req), nil
	}
	return nil, errors.New("scripted: no more responses")
}

// Stream yields the next scripted response.
func (p *Script) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		steps, err := p.next(req)
		if err != nil {
			yield(model.Part{}, &model.APIError{Provider: "scripted", Status: 400, Message: err.Error()})
			return
		}
		for _, s := range steps {
			switch {
			case s.Gate != nil:
				select {
				case <-s.Gate:
				case <-ctx.Done():
					yield(model.Part{}, ctx.Err())
					return
				}
			case s.Err != nil:
				yield(model.Part{}, s.Err)
				return
			default:
				if !yield(s.Part, nil) {
					return
				}
			}
		}
	}
}

// Complete fails: scripted sessions have no non-streaming fallback.
func (p *Script) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, &model.APIError{Provider: "scripted", Status: 400, Message: "no fallback in tests"}
}

// Response concatenates steps into one response.
func Response(parts ...[]Step) []Step {
	var out []Step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Start opens a response.
func Start(id string) []Step {
	return []Step{{Part: model.Part{Type: model.PartMessageStart, ID: id, Model: "test-model", Usage: model.Usage{InputTokens: 10}}}}
}

// Text is text block idx streamed in chunks.
func Text(idx int, chunks ...string) []Step {
	out := []Step{{Part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockText}}}
	for _, c := range chunks {
		out = append(out, Step{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaText, Text: c}})
	}
	return append(out, Step{Part: model.Part{Type: model.PartBlockStop, Index: idx}})
}

// Reasoning is reasoning block idx streamed in chunks, with a signature.
func Reasoning(idx int, chunks ...string) []Step {
	out := []Step{{Part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockReasoning}}}
	for _, c := range chunks {
		out = append(out, Step{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaReasoning, Text: c}})
	}
	out = append(out, Step{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaSignature, Text: fmt.Sprint("sig-", idx)}})
	return append(out, Step{Part: model.Part{Type: model.PartBlockStop, Index: idx}})
}

// ToolUse is tool call idx with its input streamed in two halves.
func ToolUse(idx int, id, name string, input any) []Step {
	data, err := json.Marshal(input)
	if err != nil {
		panic(err)
	}
	s := string(data)
	half := len(s) / 2
	return []Step{
		{Part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockToolUse, ID: id, Name: name}},
		{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaInputJSON, Text: s[:half]}},
		{Part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaInputJSON, Text: s[half:]}},
		{Part: model.Part{Type: model.PartBlockStop, Index: idx}},
	}
}

// Stop ends a response with a stop reason.
func Stop(reason string) []Step {
	return []Step{
		{Part: model.Part{Type: model.PartMessageDelta, StopReason: reason, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}},
		{Part: model.Part{Type: model.PartMessageStop}},
	}
}

// Gate is a step that waits for ch to be closed.
func Gate(ch chan struct{}) []Step { return []Step{{Gate: ch}} }

// Answer is a whole plain response: text in chunks, ending the turn.
func Answer(id string, chunks ...string) []Step {
	return Response(Start(id), Text(0, chunks...), Stop(model.StopEndTurn))
}

// StreamOptions make a session's model stream retry at once and watch
// nothing, so that tests never wait on a clock.
func StreamOptions() model.StreamOptions {
	return model.StreamOptions{
		BaseDelay: time.Nanosecond, MaxDelay: time.Nanosecond,
		StallWarning: -1, IdleTimeout: -1, FallbackAfter: -1,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}
}

// Pipe returns two line connections joined in memory: what one writes the
// other reads, with no buffer in between. maxMessage is a's incoming limit
// (0: the default); b has the default. Closing either side ends both
// directions.
func Pipe(maxMessage int) (a, b *rpc.LineConn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	return rpc.NewLineConn(ar, &joined{aw, bw}, maxMessage), rpc.NewLineConn(br, &joined{bw, aw}, 0)
}

// joined is the write end of one pipe that, when closed, also closes the
// write end of the other, so that a Close on either side ends both
// directions.
type joined struct {
	w     *io.PipeWriter
	other *io.PipeWriter
}

func (j *joined) Write(p []byte) (int, error) { return j.w.Write(p) }

func (j *joined) Close() error {
	j.w.Close()
	j.other.Close()
	return nil
}
