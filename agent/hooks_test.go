package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// heard records the events a session's hooks are told.
type heard struct {
	mu     sync.Mutex
	events []string // "Name:Match"
}

func (h *heard) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, s)
}

func (h *heard) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func bashThenText(text string) [][]modeltest.Step {
	return [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo ran"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, text), modeltest.Stop("end_turn")),
	}
}

// TestHookEvents: what each event's answer does to a run.
func TestHookEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		responses [][]modeltest.Step
		hooks     func(*heard) agent.Hooks
		wantErr   error
		wantText  string
		check     func(t *testing.T, s *agent.Session, p *modeltest.Script, h *heard)
	}{
		{
			name:      "UserPromptSubmit and SessionStart add context for the model",
			responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Hi."), modeltest.Stop("end_turn"))},
			hooks: func(h *heard) agent.Hooks {
				return agent.Hooks{Event: func(_ context.Context, ev agent.HookEvent) agent.HookResult {
					h.add(string(ev.Name) + ":" + ev.Match)
					switch ev.Name {
					case agent.EventSessionStart:
						return agent.HookResult{Context: "from session start"}
					case agent.EventUserPromptSubmit:
						return agent.HookResult{Context: "from prompt " + ev.Fields["prompt"].(string)}
					}
					return agent.HookResult{}
				}}
			},
			wantText: "Hi.",
			check: func(t *testing.T, s *agent.Session, p *modeltest.Script, h *heard) {
				var texts []string
				for _, c := range p.Request(0).Messages[0].Content {
					texts = append(texts, c.Text)
				}
				if want := []string{"hello", "from session start", "from prompt hello"}; !slices.Equal(texts, want) {
					t.Errorf("the model got %q, want %q", texts, want)
				}
				if got := s.Messages().Messages[0].Text(); got != "hello" {
					t.Errorf("the display shows %q", got)
				}
				if want := []string{"SessionStart:startup", "UserPromptSubmit:", "Stop:"}; !slices.Equal(h.list(), want) {
					t.Errorf("heard %q, want %q", h.list(), want)
				}
			},
		},
		{
			name:      "a blocked prompt is shown refused and never reaches the model",
			responses: nil,
			hooks: func(*heard) agent.Hooks {
				return agent.Hooks{Event: func(_ context.Context, ev agent.HookEvent) agent.HookResult {
					return agent.HookResult{Block: ev.Name == agent.EventUserPromptSubmit, Reason: "not today"}
				}}
			},
			wantErr: agent.ErrPromptBlocked,
			check: func(t *testing.T, s *agent.Session, p *modeltest.Script, _ *heard) {
				if p.Count() != 0 {
					t.Errorf("%d model requests", p.Count())
				}
				m := s.Messages().Messages
				if len(m) != 1 || len(m[0].Blocks) != 2 || m[0].Blocks[1].Type != protocol.BlockError || !strings.Contains(m[0].Blocks[1].Content, "not today") {
					t.Errorf("display %+v", m)
				}
			},
		},
		{
			name: "a Stop block sends the model back once with the reason",
			responses: [][]modeltest.Step{
				modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Early."), modeltest.Stop("end_turn")),
				modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Tested."), modeltest.Stop("end_turn")),
			},
			hooks: func(h *heard) agent.Hooks {
				return agent.Hooks{Event: func(_ context.Context, ev agent.HookEvent) agent.HookResult {
					if ev.Name != agent.EventStop {
						return agent.HookResult{}
					}
					active := ev.Fields["stop_hook_active"].(bool)
					h.add("Stop active=" + map[bool]string{true: "true", false: "false"}[active])
					return agent.HookResult{Block: !active, Reason: "run the tests"}
				}}
			},
			wantText: "Tested.",
			check: func(t *testing.T, _ *agent.Session, p *modeltest.Script, h *heard) {
				msgs := p.Request(1).Messages
				if last := msgs[len(msgs)-1]; last.Content[0].Text != "run the tests" {
					t.Errorf("the model was told %+v", last)
				}
				if want := []string{"Stop active=false", "Stop active=true"}; !slices.Equal(h.list(), want) {
					t.Errorf("heard %q", h.list())
				}
			},
		},
		{
			name:      "PostToolUse feedback joins the result; a PreToolUse allow runs it in the default mode",
			responses: bashThenText("Noted."),
			hooks: func(*heard) agent.Hooks {
				return agent.Hooks{
					PreToolUse: func(context.Context, agent.ToolCall) agent.Verdict {
						return agent.Verdict{Decision: protocol.DecisionAllow}
					},
					PostToolUse: func(_ context.Context, c agent.ToolCall, result string, isError bool) agent.HookResult {
						return agent.HookResult{Block: true, Reason: "lint: " + c.Name + " said " + strings.TrimSpace(result)}
					},
				}
			},
			wantText: "Noted.",
			check: func(t *testing.T, s *agent.Session, p *modeltest.Script, _ *heard) {
				msgs := p.Request(1).Messages
				want := "ran\n\nPostToolUse hook feedback:\nlint: Bash said ran"
				if got := msgs[len(msgs)-1].Content[0].Text; got != want {
					t.Errorf("the model got %q, want %q", got, want)
				}
				if tb := s.Messages().Messages[1].Blocks[0]; !strings.Contains(tb.Result, "lint: Bash said ran") {
					t.Errorf("the display shows %q", tb.Result)
				}
			},
		},
		{
			name:      "continue false stops the run after the round",
			responses: bashThenText("never"),
			hooks: func(*heard) agent.Hooks {
				return agent.Hooks{
					PreToolUse: func(context.Context, agent.ToolCall) agent.Verdict {
						return agent.Verdict{Decision: protocol.DecisionAllow}
					},
					PostToolUse: func(context.Context, agent.ToolCall, string, bool) agent.HookResult {
						return agent.HookResult{Halt: true, StopReason: "budget spent"}
					},
				}
			},
			wantErr: agent.ErrHookStopped,
			check: func(t *testing.T, _ *agent.Session, p *modeltest.Script, _ *heard) {
				if p.Count() != 1 {
					t.Errorf("%d model requests, want 1", p.Count())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &heard{}
			p := &modeltest.Script{Responses: tt.responses}
			s := newSession(t, p, func(o *agent.Options) { o.Hooks = tt.hooks(h) })
			res, err := s.Run(bg(t), "hello")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && res.Text != tt.wantText {
				t.Errorf("answer %q, want %q", res.Text, tt.wantText)
			}
			tt.check(t, s, p, h)
		})
	}
}

// TestHookLifecycle: SessionStart's sources, PreCompact, SessionEnd and
// Notification fire when Claude Code fires them.
func TestHookLifecycle(t *testing.T) {
	t.Parallel()
	h := &heard{}
	notified := make(chan struct{}, 1)
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Summary."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m3"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo hi"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m4"), modeltest.Text(0, "Two."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m5"), modeltest.Text(0, "Three."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.Hooks = agent.Hooks{Event: func(_ context.Context, ev agent.HookEvent) agent.HookResult {
			if ev.SessionID == "" {
				t.Errorf("%s without a session id", ev.Name)
			}
			if ev.Name == agent.EventNotification {
				notified <- struct{}{}
			}
			if ev.Name != agent.EventUserPromptSubmit && ev.Name != agent.EventStop {
				h.add(string(ev.Name) + ":" + ev.Match)
			}
			return agent.HookResult{}
		}}
	})
	if _, err := s.Run(bg(t), "one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(bg(t)); err != nil {
		t.Fatal(err)
	}
	rec := record(t, s)
	hd, _ := s.Submit(bg(t), "two")
	req := rec.waitFor("permission request", func(ev protocol.Event) bool {
		_, ok := ev.(protocol.PermissionRequest)
		return ok
	}).(protocol.PermissionRequest)
	<-notified
	if err := s.AnswerPermission(req.RequestID, protocol.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	if _, err := hd.Wait(bg(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Clear(bg(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(bg(t), "three"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := []string{"SessionStart:startup", "PreCompact:manual", "SessionStart:compact", "Notification:permission_prompt",
		"SessionEnd:clear", "SessionStart:clear", "SessionEnd:other"}
	if got := h.list(); !slices.Equal(got, want) {
		t.Fatalf("heard %q\nwant  %q", got, want)
	}
}

// TestJoinHooks: every source runs; the strictest decision and any block
// win.
func TestJoinHooks(t *testing.T) {
	t.Parallel()
	verdict := func(d protocol.Decision, reason string) agent.Hooks {
		return agent.Hooks{PreToolUse: func(context.Context, agent.ToolCall) agent.Verdict {
			return agent.Verdict{Decision: d, Reason: reason, Input: []byte(`{"x":1}`)}
		}}
	}
	tests := []struct {
		name      string
		sources   []agent.Hooks
		want      protocol.Decision
		wantInput bool
	}{
		{"none", []agent.Hooks{{}, {}}, "", false},
		{"allow alone", []agent.Hooks{verdict(protocol.DecisionAllow, "")}, protocol.DecisionAllow, true},
		{"deny beats allow", []agent.Hooks{verdict(protocol.DecisionAllow, ""), verdict(protocol.DecisionDeny, "no")}, protocol.DecisionDeny, false},
		{"ask beats allow", []agent.Hooks{verdict(agent.VerdictAsk, ""), verdict(protocol.DecisionAllow, "")}, agent.VerdictAsk, false},
		{"no opinion keeps the allow", []agent.Hooks{verdict("", ""), verdict(protocol.DecisionAllow, "")}, protocol.DecisionAllow, true},
	}
	for _, tt := range tests {
		j := agent.JoinHooks(tt.sources...)
		if j.PreToolUse == nil {
			if tt.want != "" {
				t.Errorf("%s: no PreToolUse", tt.name)
			}
			continue
		}
		v := j.PreToolUse(context.Background(), agent.ToolCall{Name: "Bash"})
		if v.Decision != tt.want || (v.Input != nil) != tt.wantInput {
			t.Errorf("%s: %+v", tt.name, v)
		}
	}
	ev := func(r agent.HookResult) agent.Hooks {
		return agent.Hooks{Event: func(context.Context, agent.HookEvent) agent.HookResult { return r }}
	}
	j := agent.JoinHooks(ev(agent.HookResult{Context: "a"}), ev(agent.HookResult{Block: true, Reason: "b", Context: "c"}))
	if r := j.Event(context.Background(), agent.HookEvent{}); !r.Block || r.Reason != "b" || r.Context != "a\nc" {
		t.Errorf("joined events: %+v", r)
	}
}
