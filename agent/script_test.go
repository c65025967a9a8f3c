package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// step is one thing a scripted response does: yield a part, fail, or wait
// for the test (a gate) before going on.
type step struct {
	part model.Part
	err  error
	gate chan struct{}
}

// scripted is a model.Provider that answers each request with the next
// scripted response. It records the requests.
type scripted struct {
	mu        sync.Mutex
	responses [][]step
	requests  []*model.Request
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) next(req *model.Request) ([]step, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, req)
	if len(p.responses) == 0 {
		return nil, errors.New("scripted: no more responses")
	}
	r := p.responses[0]
	p.responses = p.responses[1:]
	return r, nil
}

func (p *scripted) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		steps, err := p.next(req)
		if err != nil {
			yield(model.Part{}, &model.APIError{Provider: "scripted", Status: 400, Message: err.Error()})
			return
		}
		for _, s := range steps {
			switch {
			case s.gate != nil:
				select {
				case <-s.gate:
				case <-ctx.Done():
					yield(model.Part{}, ctx.Err())
					return
				}
			case s.err != nil:
				yield(model.Part{}, s.err)
				return
			default:
				if !yield(s.part, nil) {
					return
				}
			}
		}
	}
}

func (p *scripted) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, &model.APIError{Provider: "scripted", Status: 400, Message: "no fallback in tests"}
}

func (p *scripted) request(i int) *model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[i]
}

func (p *scripted) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// Builders of scripted responses.

func start(id string) step {
	return step{part: model.Part{Type: model.PartMessageStart, ID: id, Model: "test-model", Usage: model.Usage{InputTokens: 10}}}
}

func text(idx int, chunks ...string) []step {
	out := []step{{part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockText}}}
	for _, c := range chunks {
		out = append(out, step{part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaText, Text: c}})
	}
	return append(out, step{part: model.Part{Type: model.PartBlockStop, Index: idx}})
}

func reasoning(idx int, chunks ...string) []step {
	out := []step{{part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockReasoning}}}
	for _, c := range chunks {
		out = append(out, step{part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaReasoning, Text: c}})
	}
	out = append(out, step{part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaSignature, Text: "sig-" + fmt.Sprint(idx)}})
	return append(out, step{part: model.Part{Type: model.PartBlockStop, Index: idx}})
}

func toolUse(idx int, id, name string, input any) []step {
	data, _ := json.Marshal(input)
	s := string(data)
	half := len(s) / 2
	return []step{
		{part: model.Part{Type: model.PartBlockStart, Index: idx, Block: model.BlockToolUse, ID: id, Name: name}},
		{part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaInputJSON, Text: s[:half]}},
		{part: model.Part{Type: model.PartBlockDelta, Index: idx, Delta: model.DeltaInputJSON, Text: s[half:]}},
		{part: model.Part{Type: model.PartBlockStop, Index: idx}},
	}
}

func stop(reason string) []step {
	return []step{
		{part: model.Part{Type: model.PartMessageDelta, StopReason: reason, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}},
		{part: model.Part{Type: model.PartMessageStop}},
	}
}

func response(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(s step) []step { return []step{s} }

// newSession starts a session on the provider in a temporary directory.
func newSession(t *testing.T, p model.Provider, mod func(*agent.Options)) *agent.Session {
	t.Helper()
	opts := agent.Options{
		Provider: p,
		WorkDir:  t.TempDir(),
		Stream: model.StreamOptions{
			BaseDelay: time.Nanosecond, MaxDelay: time.Nanosecond,
			StallWarning: -1, IdleTimeout: -1, FallbackAfter: -1,
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		},
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder follows a session like a face does: it applies every event to
// its own protocol.List and keeps them.
type recorder struct {
	t      *testing.T
	sub    *agent.Subscription
	list   *protocol.List
	events []protocol.Event
}

func record(t *testing.T, s *agent.Session) *recorder {
	snap, sub := s.SnapshotAndSubscribe(agent.SubscribeOptions{})
	t.Cleanup(sub.Close)
	return &recorder{t: t, sub: sub, list: protocol.NewList(snap)}
}

// drain applies every event published so far.
func (r *recorder) drain(s *agent.Session) {
	r.t.Helper()
	want := s.Seq()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for r.list.Seq() < want {
		ev, err := r.sub.Next(ctx)
		if err != nil {
			r.t.Fatalf("drain: %v (at seq %d of %d)", err, r.list.Seq(), want)
		}
		r.events = append(r.events, ev)
		if err := r.list.Apply(ev); err != nil {
			r.t.Fatalf("apply %s seq %d: %v", ev.Method(), ev.Head().Seq, err)
		}
	}
}

// waitFor reads events until one satisfies ok.
func (r *recorder) waitFor(what string, ok func(protocol.Event) bool) protocol.Event {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ev, err := r.sub.Next(ctx)
		if err != nil {
			r.t.Fatalf("waiting for %s: %v", what, err)
		}
		r.events = append(r.events, ev)
		if err := r.list.Apply(ev); err != nil {
			r.t.Fatalf("apply %s: %v", ev.Method(), err)
		}
		if ok(ev) {
			return ev
		}
	}
}

// checkMatches asserts that the recorder's list equals the session's
// snapshot: the events describe the state exactly.
func (r *recorder) checkMatches(s *agent.Session) {
	r.t.Helper()
	r.drain(s)
	got, _ := json.Marshal(r.list.Snapshot())
	want, _ := json.Marshal(s.Messages())
	if string(got) != string(want) {
		r.t.Fatalf("list rebuilt from events differs from the snapshot:\n got %s\nwant %s", got, want)
	}
}

func (r *recorder) methods() []string {
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.Method())
	}
	return out
}
