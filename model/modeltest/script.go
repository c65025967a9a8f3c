package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

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
// its responses, or, when they are used up, with Respond's answer. It
// records the requests. It is safe for concurrent use once it streams; set
// Responses and Respond before.
type Script struct {
	// Responses are the scripted answers, in order.
	Responses [][]Step
	// Respond answers the requests past Responses; nil answers them with
	// an error.
	Respond func(req *model.Request) []Step

	mu       sync.Mutex
	requests []*model.Request
}

// NewScript returns a script with the given responses.
func NewScript(responses ...[]Step) *Script { return &Script{Responses: responses} }

func (p *Script) Name() string { return "scripted" }

// Push adds responses after those still waiting.
func (p *Script) Push(responses ...[]Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Responses = append(p.Responses, responses...)
}

// Request returns the i-th request the script was sent.
func (p *Script) Request(i int) *model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[i]
}

// Count is the number of requests so far.
func (p *Script) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

func (p *Script) next(req *model.Request) ([]Step, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
	if len(p.Responses) > 0 {
		r := p.Responses[0]
		p.Responses = p.Responses[1:]
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

// Reasoning is reasoning block idx streamed in chunks, with the signature
// "sig-IDX".
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

// Fail is a step that ends the response with err.
func Fail(err error) []Step { return []Step{{Err: err}} }

// Answer is a whole plain response: text in chunks, ending the turn.
func Answer(id string, chunks ...string) []Step {
	return Response(Start(id), Text(0, chunks...), Stop(model.StopEndTurn))
}

// StreamOptions make a model stream retry at once and watch nothing, so
// that tests never wait on a clock.
func StreamOptions() model.StreamOptions {
	return model.StreamOptions{
		BaseDelay: time.Nanosecond, MaxDelay: time.Nanosecond,
		StallWarning: -1, IdleTimeout: -1, FallbackAfter: -1,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}
}
