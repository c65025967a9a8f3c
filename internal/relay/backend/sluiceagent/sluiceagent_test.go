package sluiceagent

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted answers each model request with the next scripted response.
type scripted struct {
	mu        sync.Mutex
	responses [][]model.Part
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Part, error] {
	return func(yield func(model.Part, error) bool) {
		p.mu.Lock()
		if len(p.responses) == 0 {
			p.mu.Unlock()
			yield(model.Part{}, &model.APIError{Provider: "scripted", Status: 400, Message: "no more responses"})
			return
		}
		parts := p.responses[0]
		p.responses = p.responses[1:]
		p.mu.Unlock()
		for _, part := range parts {
			if !yield(part, nil) {
				return
			}
		}
	}
}

func (p *scripted) Complete(context.Context, *model.Request) (*model.Response, error) {
	return nil, &model.APIError{Provider: "scripted", Status: 400, Message: "no fallback"}
}

func response(id, text, stop string, tool *model.Part) []model.Part {
	parts := []model.Part{
		{Type: model.PartMessageStart, ID: id, Model: "m"},
		{Type: model.PartBlockStart, Index: 0, Block: model.BlockText},
		{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: text},
		{Type: model.PartBlockStop, Index: 0},
	}
	if tool != nil {
		parts = append(parts,
			model.Part{Type: model.PartBlockStart, Index: 1, Block: model.BlockToolUse, ID: "toolu_1", Name: tool.Name},
			model.Part{Type: model.PartBlockDelta, Index: 1, Delta: model.DeltaInputJSON, Text: tool.Text},
			model.Part{Type: model.PartBlockStop, Index: 1})
	}
	return append(parts,
		model.Part{Type: model.PartMessageDelta, StopReason: stop},
		model.Part{Type: model.PartMessageStop})
}

type memKV struct {
	mu sync.Mutex
	m  map[string]string
}

func (k *memKV) Get(_ context.Context, key string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	if !ok {
		return "", store.ErrNotFound
	}
	return v, nil
}

func (k *memKV) Put(_ context.Context, key, value string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = value
	return nil
}

// TestRunWithApproval: a tool turn asks for approval, the chat allows it,
// the run ends with the final answer and the session goes idle.
func TestRunWithApproval(t *testing.T) {
	t.Parallel()
	p := &scripted{responses: [][]model.Part{
		response("m1", "Let me look.", "tool_use", &model.Part{Name: "Bash", Text: `{"command":"echo hi"}`}),
		response("m2", "It printed hi.", "end_turn", nil),
	}}
	kv := &memKV{m: map[string]string{}}
	b := New(Config{KV: kv, Options: func(string) agent.Options {
		return agent.Options{Provider: p, WorkDir: t.TempDir(), PermissionMode: protocol.ModeDefault}
	}})
	defer b.Close()
	conv, err := b.Open(context.Background(), "chat")
	if err != nil {
		t.Fatal(err)
	}
	if kv.m["sluice/session/chat"] != conv.Session() {
		t.Errorf("session id not kept: %v", kv.m)
	}
	r, err := conv.Start(context.Background(), "run echo")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stops []string
	asked := false
	for {
		ev, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case protocol.PermissionRequest:
			asked = true
			if err := conv.AnswerPermission(e.RequestID, protocol.DecisionAllow); err != nil {
				t.Fatal(err)
			}
		case protocol.TurnEnded:
			stops = append(stops, e.StopReason)
		}
	}
	if !asked || len(stops) != 2 || stops[0] != "tool_use" || stops[1] != "end_turn" {
		t.Errorf("asked %v, stops %v", asked, stops)
	}
	if got := r.Result(); got != "It printed hi." {
		t.Errorf("result %q", got)
	}
	if _, err := r.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: %v", err)
	}

	old := conv.Session()
	if err := conv.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if conv.Session() == old || kv.m["sluice/session/chat"] != conv.Session() {
		t.Errorf("/new kept session %s", old)
	}
}
