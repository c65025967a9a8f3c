package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/tool"
)

// firstText is the text of a request's first message: which session (the
// parent or which child) the request is of.
func firstText(req *model.Request) string {
	var sb strings.Builder
	for _, c := range req.Messages[0].Content {
		if c.Type == model.ContentText {
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}

// results counts the tool results in a request: how far its session got.
func results(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, c := range m.Content {
			if c.Type == model.ContentToolResult {
				n++
			}
		}
	}
	return n
}

func toolNames(req *model.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

// echoTool answers with its input's text; kind decides its approval.
func echoTool(t *testing.T, kind tool.Kind) tool.Tool {
	type in struct {
		Text string `json:"text"`
	}
	et, err := tool.NewFunc(tool.Func[in]{Name: "Echo", Kind: kind, Run: func(_ context.Context, _ *tool.Env, in in, out tool.Output) (tool.Result, error) {
		out.Write([]byte(in.Text))
		return tool.Result{Content: "echo: " + in.Text}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return et
}

// delegating answers the parent's first request with Agent calls (one per
// prompt), its second with "parent done", and each child with one Echo
// call and then its report, "report of PROMPT".
func delegating(name string, prompts ...string) func(req *model.Request) []modeltest.Step {
	return func(req *model.Request) []modeltest.Step {
		first := firstText(req)
		if slices.Contains(prompts, first) { // a child
			if results(req) == 0 {
				return modeltest.Response(modeltest.Start("c1-"+first), modeltest.Text(0, "Echoing."),
					modeltest.ToolUse(1, "echo-"+first, "Echo", map[string]any{"text": first}), modeltest.Stop("tool_use"))
			}
			return modeltest.Answer("c2-"+first, "report of ", first)
		}
		if results(req) == 0 {
			steps := modeltest.Start("p1")
			for i, p := range prompts {
				steps = modeltest.Response(steps, modeltest.ToolUse(i, "agent-"+p, name, map[string]any{
					"description": "do " + p, "prompt": p, "subagent_type": "general-purpose"}))
			}
			return modeltest.Response(steps, modeltest.Stop("tool_use"))
		}
		return modeltest.Answer("p2", "parent done")
	}
}

func TestSubagentNestedUnderItsCall(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Agent", "Task"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := &modeltest.Script{Respond: delegating(name, "child task")}
			s := newSession(t, p, func(o *agent.Options) {
				o.Tools = []tool.Tool{echoTool(t, tool.ReadOnly)}
				o.Subagents = []agent.Subagent{}
			})
			rec := record(t, s)
			res, err := s.Run(context.Background(), "main task")
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "parent done" {
				t.Errorf("answer %q", res.Text)
			}
			rec.checkMatches(s)

			// The child's events all name the call and nest under it.
			var nested int
			for _, ev := range rec.events {
				if h := ev.Head(); h.ParentToolID != "" {
					nested++
					if h.ParentToolID != "agent-child task" {
						t.Errorf("%s names parent %q", ev.Method(), h.ParentToolID)
					}
					if _, ok := ev.(protocol.RunStateChanged); ok {
						t.Error("the child's run state reached the parent's stream")
					}
				}
			}
			if nested == 0 {
				t.Fatal("no event of the child")
			}
			snap := s.Messages()
			call := snap.Messages[1].Blocks[0]
			if call.Name != name || call.Stage != protocol.StageEnd || call.Success == nil || !*call.Success {
				t.Fatalf("the call's block: %+v", call)
			}
			if !strings.HasPrefix(call.Result, "report of child task") || !strings.Contains(call.Result, "tool_uses: 1") {
				t.Errorf("the call's result %q", call.Result)
			}
			kids := call.Messages
			if len(kids) != 3 || kids[0].Role != protocol.RoleUser || kids[0].Text() != "child task" ||
				kids[1].Blocks[1].Name != "Echo" || kids[1].Blocks[1].Result != "echo: child task" || kids[2].Text() != "report of child task" {
				js, _ := json.MarshalIndent(kids, "", " ")
				t.Fatalf("nested messages:\n%s", js)
			}

			// The child had its own context, prompt and tools.
			var child *model.Request
			for i := range p.Count() {
				if r := p.Request(i); firstText(r) == "child task" && child == nil {
					child = r
				}
			}
			if child == nil || len(child.Messages) != 1 {
				t.Fatalf("the child's first request: %+v", child)
			}
			if !strings.Contains(child.System, "You are a subagent") {
				t.Errorf("child system prompt %q", child.System)
			}
			if got := toolNames(child); !slices.Equal(got, []string{"Echo"}) {
				t.Errorf("child tools %v", got)
			}
			if got := toolNames(p.Request(0)); !slices.Equal(got, []string{"Echo", "Agent"}) {
				t.Errorf("parent tools %v", got)
			}
			// Its usage is the run's too.
			if len(res.Subagents) != 1 {
				t.Fatalf("subagents %+v", res.Subagents)
			}
			sr := res.Subagents[0]
			if sr.Type != "general-purpose" || sr.Turns != 2 || sr.ToolUses != 1 || sr.Usage.InputTokens != 20 || sr.Usage.OutputTokens != 10 || sr.ToolID != "agent-child task" {
				t.Errorf("subagent run %+v", sr)
			}
			if res.Usage.InputTokens != 20 {
				t.Errorf("the run's own usage %+v", res.Usage)
			}
		})
	}
}

// TestSubagentsInParallel: two Agent calls of one response run at once:
// each child's answer waits until the other child has asked the model.
func TestSubagentsInParallel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asked := map[string]chan struct{}{"one": make(chan struct{}), "two": make(chan struct{})}
	other := map[string]string{"one": "two", "two": "one"}
	base := delegating("Agent", "one", "two")
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		steps := base(req)
		if f := firstText(req); asked[f] != nil && results(req) == 0 {
			mu.Lock()
			close(asked[f])
			mu.Unlock()
			return modeltest.Response(modeltest.Gate(asked[other[f]]), steps)
		}
		return steps
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.Tools = []tool.Tool{echoTool(t, tool.ReadOnly)}
		o.Subagents = []agent.Subagent{}
	})
	rec := record(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "both")
	if err != nil {
		t.Fatal(err)
	}
	rec.checkMatches(s)
	blocks := s.Messages().Messages[1].Blocks
	for i, want := range []string{"report of one", "report of two"} {
		if !strings.HasPrefix(blocks[i].Result, want) || len(blocks[i].Messages) != 3 {
			t.Errorf("call %d: result %q, %d nested messages", i, blocks[i].Result, len(blocks[i].Messages))
		}
	}
	if len(res.Subagents) != 2 {
		t.Errorf("subagents %+v", res.Subagents)
	}
}

// TestSubagentAbortCascades: aborting the parent stops the child and ends
// its blocks; nothing of the child outlives the run.
func TestSubagentAbortCascades(t *testing.T) {
	t.Parallel()
	never := make(chan struct{})
	base := delegating("Agent", "stuck")
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		if firstText(req) == "stuck" {
			return modeltest.Response(modeltest.Start("c1"), modeltest.Text(0, "partial"), modeltest.Gate(never))
		}
		return base(req)
	}}
	s := newSession(t, p, func(o *agent.Options) { o.Subagents = []agent.Subagent{} })
	rec := record(t, s)
	h, err := s.Submit(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor("the child's text", func(ev protocol.Event) bool {
		e, ok := ev.(protocol.AssistantContentUpdated)
		return ok && e.ParentToolID != "" && e.Chunk == "partial"
	})
	s.Abort("")
	res, err := h.Wait(context.Background())
	if !errors.Is(err, agent.ErrAborted) {
		t.Fatalf("run error %v", err)
	}
	rec.checkMatches(s)
	call := s.Messages().Messages[1].Blocks[0]
	if call.Stage != protocol.StageEnd || call.Success == nil || *call.Success {
		t.Fatalf("the call's block %+v", call)
	}
	kids := call.Messages
	if len(kids) != 2 || kids[1].Blocks[0].Stage != protocol.StageEnd || kids[1].Blocks[0].Content != "partial" {
		js, _ := json.MarshalIndent(kids, "", " ")
		t.Fatalf("the child's messages after the abort:\n%s", js)
	}
	if len(res.Subagents) != 1 || !errors.Is(res.Subagents[0].Err, agent.ErrAborted) {
		t.Errorf("subagents %+v", res.Subagents)
	}
}

// TestSubagentPermissionThroughParent: a child's permission request is on
// the parent's stream and in its view state, and the parent answers it.
func TestSubagentPermissionThroughParent(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Respond: delegating("Agent", "ask")}
	s := newSession(t, p, func(o *agent.Options) {
		o.Tools = []tool.Tool{echoTool(t, tool.Execute)}
		o.Subagents = []agent.Subagent{}
	})
	rec := record(t, s)
	h, err := s.Submit(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	req := rec.waitFor("the child's permission request", func(ev protocol.Event) bool {
		_, ok := ev.(protocol.PermissionRequest)
		return ok
	}).(protocol.PermissionRequest)
	if req.ParentToolID != "agent-ask" || req.Name != "Echo" {
		t.Fatalf("request %+v", req)
	}
	if pend := s.PendingPermissions(); len(pend) != 1 || pend[0].RequestID != req.RequestID {
		t.Fatalf("pending %+v", pend)
	}
	if err := s.AnswerPermission(req.RequestID, protocol.DecisionAllow); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.checkMatches(s)
	kids := s.Messages().Messages[1].Blocks[0].Messages
	if got := kids[1].Blocks[1]; got.Result != "echo: ask" {
		t.Errorf("the child's call after the answer: %+v", got)
	}
	if err := s.AnswerPermission("nope", protocol.DecisionAllow); !errors.Is(err, agent.ErrUnknownRequest) {
		t.Errorf("unknown request: %v", err)
	}
}

// TestSubagentStopHook: a subagent's end fires SubagentStop (whose block
// sends it back to work), never Stop, SessionStart or UserPromptSubmit.
func TestSubagentStopHook(t *testing.T) {
	t.Parallel()
	h := &heard{}
	var once sync.Once
	base := delegating("Agent", "child")
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		if firstText(req) == "child" && len(req.Messages) > 4 {
			return modeltest.Answer("c3", "again")
		}
		return base(req)
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.Tools = []tool.Tool{echoTool(t, tool.ReadOnly)}
		o.Subagents = []agent.Subagent{}
		o.Hooks = agent.Hooks{Event: func(_ context.Context, ev agent.HookEvent) agent.HookResult {
			h.add(string(ev.Name) + ":" + ev.Match)
			if ev.Name == agent.EventSubagentStop {
				if ev.Fields["agent_type"] != "general-purpose" || ev.Fields["agent_id"] == "" || ev.SessionID == "" {
					t.Errorf("SubagentStop fields %+v, session %q", ev.Fields, ev.SessionID)
				}
				var r agent.HookResult
				once.Do(func() { r = agent.HookResult{Block: true, Reason: "check once more"} })
				return r
			}
			return agent.HookResult{}
		}}
	})
	res, err := s.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SessionStart:startup", "UserPromptSubmit:", "SubagentStop:", "SubagentStop:", "Stop:"}
	if got := h.list(); !slices.Equal(got, want) {
		t.Errorf("hooks heard %v, want %v", got, want)
	}
	if !strings.HasPrefix(s.Messages().Messages[1].Blocks[0].Result, "again") {
		t.Errorf("the call's result after SubagentStop blocked: %q", s.Messages().Messages[1].Blocks[0].Result)
	}
	if res.Subagents[0].Turns != 3 {
		t.Errorf("subagent turns %d", res.Subagents[0].Turns)
	}
}

// TestSubagentDefinitions: a definition's prompt, tools and model; an
// unknown type is an error the model is told about.
func TestSubagentDefinitions(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		switch first := firstText(req); {
		case first == "review" && results(req) == 0:
			return modeltest.Response(modeltest.Start("p1"),
				modeltest.ToolUse(0, "a1", "Agent", map[string]any{"description": "review", "prompt": "look", "subagent_type": "reviewer"}),
				modeltest.ToolUse(1, "a2", "Agent", map[string]any{"description": "bad", "prompt": "x", "subagent_type": "nobody"}),
				modeltest.ToolUse(2, "a3", "Agent", map[string]any{"description": "fast", "prompt": "quick", "model": "opus"}),
				modeltest.Stop("tool_use"))
		case first == "review":
			return modeltest.Answer("p2", "ok")
		}
		return modeltest.Answer("c", "looked")
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.Model = "claude-sonnet-4-5"
		o.Tools = []tool.Tool{echoTool(t, tool.ReadOnly), echoLike(t, "Other")}
		o.Subagents = []agent.Subagent{{Name: "reviewer", Description: "Reviews code.", Prompt: "You review code.", Tools: []string{"Other"}, Model: "haiku"}}
	})
	if _, err := s.Run(context.Background(), "review"); err != nil {
		t.Fatal(err)
	}
	desc := p.Request(0).Tools[2].Description
	if !strings.Contains(desc, "- reviewer: Reviews code. (tools: Other)") || !strings.Contains(desc, "- general-purpose:") {
		t.Errorf("Agent description %q", desc)
	}
	byPrompt := map[string]*model.Request{}
	for i := range p.Count() {
		byPrompt[firstText(p.Request(i))] = p.Request(i)
	}
	rv := byPrompt["look"]
	if rv.Model != "claude-haiku-4-5" || !strings.HasPrefix(rv.System, "You review code.") || !slices.Equal(toolNames(rv), []string{"Other"}) {
		t.Errorf("reviewer request: model %q, tools %v, system %q", rv.Model, toolNames(rv), rv.System)
	}
	if q := byPrompt["quick"]; q.Model != "claude-opus-4-1" {
		t.Errorf("model override %q", q.Model)
	}
	bad := s.Messages().Messages[1].Blocks[1]
	if bad.Success == nil || *bad.Success || !strings.Contains(bad.Error, `no agent type "nobody" (there are: general-purpose, reviewer)`) {
		t.Errorf("unknown type: %+v", bad)
	}
}

func echoLike(t *testing.T, name string) tool.Tool {
	type in struct{}
	et, err := tool.NewFunc(tool.Func[in]{Name: name, Run: func(context.Context, *tool.Env, in, tool.Output) (tool.Result, error) {
		return tool.Result{Content: name}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return et
}

// TestSubagentPersisted: the nested messages are in the session file and
// come back when it is opened again.
func TestSubagentPersisted(t *testing.T) {
	t.Parallel()
	st := store.NewJSONL(t.TempDir())
	dir := t.TempDir()
	opts := agent.Options{
		Provider: &modeltest.Script{Respond: delegating("Agent", "kept")}, WorkDir: dir, Stream: modeltest.StreamOptions(),
		Store: st, Tools: []tool.Tool{echoTool(t, tool.ReadOnly)}, Subagents: []agent.Subagent{},
	}
	s, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(s.Messages().Messages)
	s.Close()
	again, err := agent.Open(opts, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, _ := json.Marshal(again.Messages().Messages)
	if string(got) != string(want) {
		t.Errorf("reopened:\n%s\nwant\n%s", got, want)
	}
	if n := len(again.Messages().Messages[1].Blocks[0].Messages); n != 3 {
		t.Errorf("%d nested messages after reopening", n)
	}
}

// TestSubagentCutByACrash: a crash while a subagent streams leaves its
// text and calls in the session file; reopened, the call and every block
// of the subagent are ended, none left running.
func TestSubagentCutByACrash(t *testing.T) {
	t.Parallel()
	st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
	never := make(chan struct{})
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		if firstText(req) == "cut" {
			open := modeltest.Text(0, "subagent-streamed-this")
			open = open[:len(open)-1] // the block never stops
			return modeltest.Response(modeltest.Start("c1"), open, modeltest.Gate(never))
		}
		return delegating("Agent", "cut")(req)
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.Store, o.WorkDir, o.Subagents = st, dir, []agent.Subagent{}
	})
	if _, err := s.Submit(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	img := crashImage(t, st, dir, s.ID(), "subagent-streamed-this")
	r, err := agent.Open(agent.Options{Provider: modeltest.NewScript(), Store: img, WorkDir: dir, Stream: modeltest.StreamOptions()}, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call := r.Messages().Messages[1].Blocks[0]
	if call.Stage != protocol.StageEnd || len(call.Messages) != 2 {
		t.Fatalf("the call after the crash: %+v", call)
	}
	if b := call.Messages[1].Blocks[0]; b.Content != "subagent-streamed-this" || b.Stage != protocol.StageEnd {
		t.Errorf("the subagent's text after the crash: %+v", b)
	}
}
