package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of a test: generous, since the machine may be
// loaded; correctness never depends on it.
const wait = 30 * time.Second

// testClient is an ACP client that records the updates and answers
// permission requests with its answer function.
type testClient struct {
	mu       sync.Mutex
	updates  []sdk.SessionNotification
	asked    []sdk.RequestPermissionRequest
	answer   func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome
	gotAsked chan struct{} // receives once per permission request
	files    map[string]string
	reads    []string
	writes   []string
	notify   chan struct{} // receives (non-blocking) on every update

	terminals map[string]*terminal
	released  []string
	chunks    int // agent_message_chunk updates
}

func (c *testClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	if n.Update.AgentMessageChunk != nil {
		c.chunks++
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

func (c *testClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.mu.Unlock()
	if c.gotAsked != nil {
		c.gotAsked <- struct{}{}
	}
	if answer == nil {
		<-ctx.Done()
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: answer(p)}, nil
}

func (c *testClient) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, p.Path)
	text, ok := c.files[p.Path]
	if !ok {
		return sdk.ReadTextFileResponse{}, sdk.NewInternalError(map[string]any{"error": "no such file"})
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

func (c *testClient) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, p.Path)
	if c.files == nil {
		c.files = map[string]string{}
	}
	c.files[p.Path] = p.Content
	return sdk.WriteTextFileResponse{}, nil
}

// terminal is a client terminal: the command runs to its end in the
// background and its output is kept.
type terminal struct {
	cmd    []string
	done   chan struct{}
	output []byte
	code   int
}

func (c *testClient) CreateTerminal(_ context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	cmd := exec.Command(p.Command, p.Args...)
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	term := &terminal{cmd: append([]string{p.Command}, p.Args...), done: make(chan struct{})}
	go func() {
		defer close(term.done)
		term.output, _ = cmd.CombinedOutput()
		term.code = cmd.ProcessState.ExitCode()
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminals == nil {
		c.terminals = map[string]*terminal{}
	}
	id := "term-" + itoa(len(c.terminals)+1)
	c.terminals[id] = term
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *testClient) term(id string) (*terminal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.terminals[id]
	if !ok {
		return nil, sdk.NewInvalidParams(map[string]any{"error": "unknown terminal"})
	}
	return t, nil
}

func (c *testClient) KillTerminal(_ context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	_, err := c.term(p.TerminalId)
	return sdk.KillTerminalResponse{}, err
}

func (c *testClient) TerminalOutput(_ context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	<-t.done
	return sdk.TerminalOutputResponse{Output: string(t.output), ExitStatus: &sdk.TerminalExitStatus{ExitCode: sdk.Ptr(t.code)}}, nil
}

func (c *testClient) ReleaseTerminal(_ context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = append(c.released, p.TerminalId)
	return sdk.ReleaseTerminalResponse{}, nil
}

func (c *testClient) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
		return sdk.WaitForTerminalExitResponse{ExitCode: sdk.Ptr(t.code)}, nil
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
}

// snapshot returns the updates so far.
func (c *testClient) snapshot() []sdk.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionNotification(nil), c.updates...)
}

// harness is a Server on pipes with a Go SDK client on the other end.
type harness struct {
	t      testing.TB
	client *testClient
	conn   *sdk.ClientSideConnection
	dir    string
	// in writes raw lines to the agent (beside the client's own).
	in   *io.PipeWriter
	out  *rawTap
	done chan error
}

// rawTap keeps the agent's raw output lines beside passing them on.
type rawTap struct {
	mu    sync.Mutex
	w     io.Writer
	lines []string
	bytes int
}

func (r *rawTap) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.lines = append(r.lines, string(p))
	r.bytes += len(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

type harnessOpts struct {
	mode   protocol.PermissionMode
	dir    string // the store and work dir (default: a new temp dir)
	client *testClient
	hooks  func(cwd string) (agent.Hooks, error) // Options.Hooks
	// pageSize is Options.ListPageSize.
	pageSize int
	// subagents gives the sessions the Agent tool.
	subagents bool
}

func newHarness(t testing.TB, provider model.Provider, o harnessOpts) *harness {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	c := o.client
	if c == nil {
		c = &testClient{}
	}
	c.notify = make(chan struct{}, 1)
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	tap := &rawTap{w: fromAgentW}
	h := &harness{t: t, client: c, dir: dir, in: toAgentW, out: tap, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var subagents []agent.Subagent
	if o.subagents {
		subagents = []agent.Subagent{}
	}
	go func() {
		err := Serve(ctx, Options{
			Agent: agent.Options{
				Provider: provider, WorkDir: work, PermissionMode: o.mode,
				Store: store.NewJSONL(filepath.Join(dir, "store")), Stream: modeltest.StreamOptions(),
				Subagents: subagents,
			},
			Models:       []string{"test-model", "other-model"},
			Version:      "test",
			Hooks:        o.hooks,
			ListPageSize: o.pageSize,
		}, toAgentR, tap)
		fromAgentW.Close()
		h.done <- err
	}()
	h.conn = sdk.NewClientSideConnection(c, toAgentW, fromAgentR)
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		toAgentW.Close()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(wait):
			t.Error("Serve did not end after its input closed")
		}
		cancel()
	})
	return h
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) work() string { return filepath.Join(h.dir, "work") }

func (h *harness) initialize(caps sdk.ClientCapabilities) sdk.InitializeResponse {
	h.t.Helper()
	resp, err := h.conn.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return resp
}

func (h *harness) newSession() sdk.NewSessionResponse {
	h.t.Helper()
	resp, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.work(), McpServers: []sdk.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp
}

func (h *harness) prompt(id sdk.SessionId, text string) (sdk.PromptResponse, error) {
	return h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

// messageText concatenates the agent_message_chunk texts.
func messageText(ns []sdk.SessionNotification) string {
	var sb strings.Builder
	for _, n := range ns {
		if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			sb.WriteString(c.Content.Text.Text)
		}
	}
	return sb.String()
}

func thoughtText(ns []sdk.SessionNotification) string {
	var sb strings.Builder
	for _, n := range ns {
		if c := n.Update.AgentThoughtChunk; c != nil && c.Content.Text != nil {
			sb.WriteString(c.Content.Text.Text)
		}
	}
	return sb.String()
}

func toolUpdates(ns []sdk.SessionNotification) (starts []*sdk.SessionUpdateToolCall, updates []*sdk.SessionToolCallUpdate) {
	for _, n := range ns {
		if tc := n.Update.ToolCall; tc != nil {
			starts = append(starts, tc)
		}
		if tu := n.Update.ToolCallUpdate; tu != nil {
			updates = append(updates, tu)
		}
	}
	return starts, updates
}

func lastStatus(ups []*sdk.SessionToolCallUpdate) sdk.ToolCallStatus {
	for i := len(ups) - 1; i >= 0; i-- {
		if ups[i].Status != nil {
			return *ups[i].Status
		}
	}
	return ""
}

func TestInitialize(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(), harnessOpts{})
	resp := h.initialize(sdk.ClientCapabilities{})
	if resp.ProtocolVersion != sdk.ProtocolVersionNumber {
		t.Errorf("protocolVersion = %d", resp.ProtocolVersion)
	}
	caps := resp.AgentCapabilities
	if !caps.LoadSession || !caps.PromptCapabilities.EmbeddedContext || !caps.McpCapabilities.Http || !caps.McpCapabilities.Sse {
		t.Errorf("capabilities = %+v", caps)
	}
	if caps.SessionCapabilities.List == nil || caps.SessionCapabilities.Resume == nil {
		t.Errorf("session capabilities = %+v", caps.SessionCapabilities)
	}
	if len(resp.AuthMethods) != 1 || resp.AuthMethods[0].Agent == nil || resp.AuthMethods[0].Agent.Id != authMethodEnv {
		t.Fatalf("authMethods = %+v", resp.AuthMethods)
	}
	if _, err := h.conn.Authenticate(h.ctx(), sdk.AuthenticateRequest{MethodId: authMethodEnv}); err != nil {
		t.Errorf("authenticate: %v", err)
	}
	if _, err := h.conn.Authenticate(h.ctx(), sdk.AuthenticateRequest{MethodId: "nope"}); err == nil {
		t.Error("authenticate with an unknown method succeeded")
	}
}

func TestPromptStreamsChunks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"), modeltest.Reasoning(0, "Let", " me", " think"),
		modeltest.Text(1, "Hel", "lo, ", "wor", "ld!"), modeltest.Stop("end_turn"),
	)), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if sess.Modes == nil || sess.Modes.CurrentModeId != "default" || len(sess.Modes.AvailableModes) != 4 {
		t.Errorf("modes = %+v", sess.Modes)
	}
	resp, err := h.prompt(sess.SessionId, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason = %q", resp.StopReason)
	}
	ups := h.client.snapshot()
	if got := messageText(ups); got != "Hello, world!" {
		t.Errorf("message chunks = %q", got)
	}
	if got := thoughtText(ups); got != "Let me think" {
		t.Errorf("thought chunks = %q", got)
	}
	var title, commands, usage bool
	for _, n := range ups {
		if n.SessionId != sess.SessionId {
			t.Errorf("update for session %q", n.SessionId)
		}
		if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil && *u.Title == "hi" {
			title = true
		}
		if u := n.Update.AvailableCommandsUpdate; u != nil && len(u.AvailableCommands) > 0 {
			commands = true
		}
		if u := n.Update.UsageUpdate; u != nil && u.Used == 15 && u.Size == 200_000 {
			usage = true
		}
	}
	if !title || !commands || !usage {
		t.Errorf("title %v, available commands %v, usage %v", title, commands, usage)
	}
}

// TestPermission runs a Bash call through each of the four answers.
func TestPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		option   string
		want     sdk.ToolCallStatus
		askAgain bool // whether a second call of the tool asks again
		second   sdk.ToolCallStatus
	}{
		{optAllowOnce, sdk.ToolCallStatusCompleted, true, sdk.ToolCallStatusCompleted},
		{optAllowAlways, sdk.ToolCallStatusCompleted, false, sdk.ToolCallStatusCompleted},
		{optRejectOnce, sdk.ToolCallStatusFailed, true, sdk.ToolCallStatusFailed},
		{optRejectAlways, sdk.ToolCallStatusFailed, false, sdk.ToolCallStatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.option, func(t *testing.T) {
			t.Parallel()
			bash := func(id, cmd string) []modeltest.Step {
				return modeltest.Response(modeltest.Start("m"+id), modeltest.ToolUse(0, id, "Bash", map[string]any{"command": cmd}), modeltest.Stop("tool_use"))
			}
			h := newHarness(t, modeltest.NewScript(
				bash("t1", "echo one"), modeltest.Answer("a1", "done"),
				bash("t2", "echo two"), modeltest.Answer("a2", "done"),
			), harnessOpts{client: &testClient{answer: func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
				return sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(tt.option))
			}}})
			h.initialize(sdk.ClientCapabilities{})
			sess := h.newSession()
			for _, p := range []string{"first", "second"} {
				if resp, err := h.prompt(sess.SessionId, p); err != nil || resp.StopReason != sdk.StopReasonEndTurn {
					t.Fatalf("prompt %s: %v, %v", p, resp, err)
				}
			}
			h.client.mu.Lock()
			asked := append([]sdk.RequestPermissionRequest(nil), h.client.asked...)
			h.client.mu.Unlock()
			wantAsked := 1
			if tt.askAgain {
				wantAsked = 2
			}
			if len(asked) != wantAsked {
				t.Fatalf("asked %d times, want %d", len(asked), wantAsked)
			}
			req := asked[0]
			if req.ToolCall.ToolCallId != "t1" || len(req.Options) != 4 || len(req.ToolCall.Content) == 0 || req.ToolCall.Content[0].Content == nil {
				t.Fatalf("request = %+v", req)
			}
			if got := req.ToolCall.Content[0].Content.Content.Text.Text; got != "echo one" {
				t.Errorf("request shows %q, want the command", got)
			}
			starts, ups := toolUpdates(h.client.snapshot())
			if len(starts) != 2 || starts[0].Kind != sdk.ToolKindExecute {
				t.Fatalf("tool_call updates = %+v", starts)
			}
			var first, second []*sdk.SessionToolCallUpdate
			for _, u := range ups {
				switch u.ToolCallId {
				case "t1":
					first = append(first, u)
				case "t2":
					second = append(second, u)
				}
			}
			if got := lastStatus(first); got != tt.want {
				t.Errorf("first call ends %q, want %q", got, tt.want)
			}
			if got := lastStatus(second); got != tt.second {
				t.Errorf("second call ends %q, want %q", got, tt.second)
			}
		})
	}
}

func TestEditShowsDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "work", "a.txt")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "e1", "Edit", map[string]any{
			"file_path": "a.txt", "old_string": "world", "new_string": "there",
		}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "edited"),
	), harnessOpts{dir: dir, mode: protocol.ModeAcceptEdits})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if _, err := h.prompt(sess.SessionId, "edit it"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "hello there\n" {
		t.Errorf("file = %q", data)
	}
	starts, ups := toolUpdates(h.client.snapshot())
	if len(starts) != 1 || starts[0].Kind != sdk.ToolKindEdit {
		t.Fatalf("tool_call = %+v", starts)
	}
	if lastStatus(ups) != sdk.ToolCallStatusCompleted {
		t.Fatalf("status %q", lastStatus(ups))
	}
	end := ups[len(ups)-1]
	if len(end.Content) != 1 || end.Content[0].Diff == nil {
		t.Fatalf("final content = %+v", end.Content)
	}
	d := end.Content[0].Diff
	if d.Path != path || d.NewText != "there" || d.OldText == nil || *d.OldText != "world" {
		t.Errorf("diff = %+v", d)
	}
	if len(end.Locations) != 1 || end.Locations[0].Path != path {
		t.Errorf("locations = %+v", end.Locations)
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"), modeltest.Text(0, "partial ", "answer"), modeltest.Gate(gate), modeltest.Stop("end_turn"),
	)), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	type result struct {
		resp sdk.PromptResponse
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := h.prompt(sess.SessionId, "go")
		got <- result{resp, err}
	}()
	deadline := time.After(wait)
	for messageText(h.client.snapshot()) != "partial answer" {
		select {
		case <-h.client.notify:
		case <-deadline:
			t.Fatalf("chunks so far: %q", messageText(h.client.snapshot()))
		}
	}
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: sess.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || r.resp.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("prompt = %+v, %v", r.resp, r.err)
		}
	case <-deadline:
		t.Fatal("the prompt did not answer after cancel")
	}
}

func TestLoadReplaysInNewServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "hmm"), modeltest.Text(1, "first ", "answer"), modeltest.Stop("end_turn")),
	), harnessOpts{dir: dir})
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession().SessionId
	if _, err := h.prompt(id, "question one"); err != nil {
		t.Fatal(err)
	}
	// A second server on the same store, as a new process would be.
	h2 := newHarness(t, modeltest.NewScript(modeltest.Answer("m2", "second")), harnessOpts{dir: dir})
	h2.initialize(sdk.ClientCapabilities{})
	list, err := h2.conn.ListSessions(h2.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(h2.work())})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionId != id {
		t.Fatalf("session/list = %+v, %v", list, err)
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h2.work(), McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	ups := h2.client.snapshot()
	var user strings.Builder
	for _, n := range ups {
		if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
			user.WriteString(c.Content.Text.Text)
		}
	}
	if user.String() != "question one" || messageText(ups) != "first answer" || thoughtText(ups) != "hmm" {
		t.Errorf("replay: user %q, agent %q, thought %q", user.String(), messageText(ups), thoughtText(ups))
	}
	if resp, err := h2.prompt(id, "question two"); err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt after load: %+v, %v", resp, err)
	}
	if got := messageText(h2.client.snapshot()); got != "first answersecond" {
		t.Errorf("after load and prompt: %q", got)
	}
}

func TestSetModeAndModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "nope"}); err == nil {
		t.Error("set_mode with an unknown mode succeeded")
	}
	resp, err := h.conn.SetSessionConfigOption(h.ctx(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: sess.SessionId, ConfigId: configModel, Value: "other-model",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mode, mdl string
	for _, o := range resp.ConfigOptions {
		switch o.Select.Id {
		case configMode:
			mode = string(o.Select.CurrentValue)
		case configModel:
			mdl = string(o.Select.CurrentValue)
		}
	}
	if mode != "plan" || mdl != "other-model" {
		t.Errorf("config options: mode %q, model %q", mode, mdl)
	}
	deadline := time.After(wait)
	for {
		found := false
		for _, n := range h.client.snapshot() {
			if u := n.Update.CurrentModeUpdate; u != nil && u.CurrentModeId == "plan" {
				found = true
			}
		}
		if found {
			break
		}
		select {
		case <-h.client.notify:
		case <-deadline:
			t.Fatal("no current_mode_update")
		}
	}
}

// TestBadInput sends what a broken client might and checks that each gets
// a JSON-RPC error and the agent keeps serving.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(modeltest.Answer("m1", "still here")), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	raw := []string{
		"not json at all",
		`[1,2,3]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}`,
		`{"jsonrpc":"1.0","id":"v","method":"initialize"}`,
		`{"jsonrpc":"2.0","id":"u","method":"no/such/method","params":{}}`,
		`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":42}}`,
		`{"jsonrpc":"2.0","id":"s","method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":"c","method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`,
	}
	for _, line := range raw {
		if _, err := io.WriteString(h.in, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := h.prompt(sess.SessionId, "are you there?")
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt after bad input: %+v, %v", resp, err)
	}
	codes := map[string]int{}
	h.out.mu.Lock()
	for _, l := range h.out.lines {
		var m struct {
			ID    json.RawMessage     `json:"id"`
			Error *struct{ Code int } `json:"error"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Error != nil {
			codes[string(m.ID)+"/"+itoa(m.Error.Code)]++
		}
	}
	h.out.mu.Unlock()
	for _, want := range []string{"null/-32700", "null/-32600", `"v"/-32600`, `"u"/-32601`, `"p"/-32602`, `"s"/-32002`, `"c"/-32602`} {
		if codes[want] == 0 {
			t.Errorf("no error %s; errors: %v", want, codes)
		}
	}
	if codes["null/-32600"] != 2 {
		t.Errorf("want 2 invalid requests without id (array, object id), got %d", codes["null/-32600"])
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestClientFilesAndTerminal offers fs and terminal: Read sees the
// editor's unsaved buffer, Edit lands in the editor (not on the disk), and
// Bash runs in a client terminal that the tool call embeds.
func TestClientFilesAndTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "work", "buf.txt")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	client := &testClient{
		files: map[string]string{path: "unsaved buffer\n"},
		answer: func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
			return sdk.NewRequestPermissionOutcomeSelected(optAllowOnce)
		},
	}
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "r1", "Read", map[string]any{"file_path": path}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.ToolUse(0, "e1", "Edit", map[string]any{"file_path": path, "old_string": "unsaved", "new_string": "edited"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m3"), modeltest.ToolUse(0, "b1", "Bash", map[string]any{"command": "echo from-terminal"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m4", "done"),
	)
	h := newHarness(t, script, harnessOpts{dir: dir, client: client})
	h.initialize(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true})
	sess := h.newSession()
	if resp, err := h.prompt(sess.SessionId, "go"); err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := script.Request(1).Messages; !strings.Contains(lastToolResult(got), "unsaved buffer") {
		t.Errorf("Read's result %q does not show the editor's buffer", lastToolResult(got))
	}
	if got := lastToolResult(script.Request(3).Messages); !strings.Contains(got, "from-terminal") {
		t.Errorf("Bash's result = %q", got)
	}
	client.mu.Lock()
	buf, released := client.files[path], append([]string(nil), client.released...)
	client.mu.Unlock()
	if buf != "edited buffer\n" {
		t.Errorf("editor buffer = %q", buf)
	}
	if data, _ := os.ReadFile(path); string(data) != "on disk\n" {
		t.Errorf("the disk changed: %q", data)
	}
	if len(released) != 1 {
		t.Errorf("released terminals = %v", released)
	}
	_, ups := toolUpdates(h.client.snapshot())
	embedded := false
	for _, u := range ups {
		if u.ToolCallId == "b1" && len(u.Content) == 1 && u.Content[0].Terminal != nil && u.Content[0].Terminal.TerminalId == "term-1" {
			embedded = true
		}
	}
	if !embedded {
		t.Error("the Bash call does not embed its terminal")
	}
}

// lastToolResult is the text of the last tool result in msgs.
func lastToolResult(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].Content {
			if c.Type == model.ContentToolResult {
				return c.Text
			}
		}
	}
	return ""
}

// TestNewerPromptSupersedes sends a second prompt while the first still
// streams: the first ends cancelled, the second runs to its end.
func TestNewerPromptSupersedes(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "first "), modeltest.Gate(gate), modeltest.Stop("end_turn")),
		modeltest.Answer("m2", "second"),
	), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		resp, err := h.prompt(sess.SessionId, "one")
		if err != nil {
			t.Errorf("first prompt: %v", err)
		}
		first <- resp
	}()
	deadline := time.After(wait)
	for messageText(h.client.snapshot()) != "first " {
		select {
		case <-h.client.notify:
		case <-deadline:
			t.Fatal("the first prompt did not stream")
		}
	}
	resp, err := h.prompt(sess.SessionId, "two")
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("second prompt: %+v, %v", resp, err)
	}
	if r := <-first; r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("first prompt ended %q", r.StopReason)
	}
	if got := messageText(h.client.snapshot()); got != "first second" {
		t.Errorf("chunks = %q", got)
	}
}

func TestTodoWriteIsAPlan(t *testing.T) {
	t.Parallel()
	todos := []map[string]any{
		{"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
		{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
	}
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "p1", "TodoWrite", map[string]any{"todos": todos}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "planned"),
	), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if _, err := h.prompt(sess.SessionId, "plan it"); err != nil {
		t.Fatal(err)
	}
	var plan *sdk.SessionUpdatePlan
	for _, n := range h.client.snapshot() {
		if n.Update.Plan != nil {
			plan = n.Update.Plan
		}
	}
	if plan == nil || len(plan.Entries) != 2 || plan.Entries[0].Content != "Read the code" ||
		plan.Entries[0].Status != sdk.PlanEntryStatusCompleted || plan.Entries[1].Status != sdk.PlanEntryStatusInProgress {
		t.Fatalf("plan = %+v", plan)
	}
}

// TestRetryIsExplained: a response cut mid-stream is retried; the client,
// which cannot be told to drop what it showed, is told why text repeats.
func TestRetryIsExplained(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), []modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockText}}},
			[]modeltest.Step{{Part: model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: "Hel"}}},
			modeltest.Fail(&model.APIError{Provider: "scripted", Status: 529, Message: "overloaded"})),
		modeltest.Answer("m2", "Hello"),
	), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if resp, err := h.prompt(sess.SessionId, "hi"); err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	ups := h.client.snapshot()
	if got := messageText(ups); got != "HelHello" {
		t.Errorf("chunks = %q", got)
	}
	if got := thoughtText(ups); !strings.Contains(got, "retried") {
		t.Errorf("thought = %q", got)
	}
}

// TestInputClosesDuringPrompt: when the client closes the agent's input
// with a prompt running, the run is stopped and the prompt still gets its
// answer before Serve returns.
func TestInputClosesDuringPrompt(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	h := newHarness(t, modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"), modeltest.Text(0, "partial"), modeltest.Gate(gate), modeltest.Stop("end_turn"),
	)), harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	go h.prompt(sess.SessionId, "go") // its answer is read from the raw output
	deadline := time.After(wait)
	for messageText(h.client.snapshot()) != "partial" {
		select {
		case <-h.client.notify:
		case <-deadline:
			t.Fatal("the prompt did not stream")
		}
	}
	h.in.Close()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
	case <-deadline:
		t.Fatal("Serve did not end")
	}
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	answered := false
	for _, l := range h.out.lines {
		if strings.Contains(l, `"stopReason":"cancelled"`) {
			answered = true
		}
	}
	if !answered {
		t.Errorf("no cancelled answer in %q", h.out.lines)
	}
}

// TestServeEndsWithContext: a cancelled context (SIGTERM) ends Serve even
// though the client keeps the input open.
func TestServeEndsWithContext(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Agent: agent.Options{Provider: modeltest.NewScript(), WorkDir: t.TempDir()}}, inR, io.Discard)
	}()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("Serve did not end with its context")
	}
}

// An image in a prompt reaches the model as image content beside the text;
// one that no model API takes, or one without inline data, is invalid params.
func TestPromptWithImage(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(modeltest.Answer("m1", "A red square."))
	h := newHarness(t, p, harnessOpts{})
	caps := h.initialize(sdk.ClientCapabilities{})
	if !caps.AgentCapabilities.PromptCapabilities.Image {
		t.Error("initialize does not offer images")
	}
	sess := h.newSession()
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))
	resp, err := h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{
		sdk.TextBlock("what is this?"), sdk.ImageBlock(png, "image/png"),
	}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	content := p.Request(0).Messages[0].Content
	if len(content) != 2 || content[0].Text != "what is this?" || content[1].Type != model.ContentImage || content[1].Data != png {
		t.Fatalf("the model got %+v", content)
	}
	for _, bad := range []sdk.ContentBlock{sdk.ImageBlock(png, "image/tiff"), sdk.ImageBlock("", "image/png")} {
		_, err := h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{bad}})
		var re *sdk.RequestError
		if !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("%s image: err %v, want invalid params", bad.Image.MimeType, err)
		}
	}
}

// TestBtwWhileARunGoes: /btw is an available command; asked while a prompt
// runs, it is answered as its own prompt's message without superseding
// the run, and the session never sees it.
func TestBtwWhileARunGoes(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "working "), modeltest.Gate(gate), modeltest.Stop("end_turn")),
		modeltest.Answer("m2", "It is 42."),
		modeltest.Answer("m3", "done"),
	)
	h := newHarness(t, script, harnessOpts{})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		resp, err := h.prompt(sess.SessionId, "work")
		if err != nil {
			t.Errorf("first prompt: %v", err)
		}
		first <- resp
	}()
	deadline := time.After(wait)
	for messageText(h.client.snapshot()) != "working " {
		select {
		case <-h.client.notify:
		case <-deadline:
			t.Fatal("the first prompt did not stream")
		}
	}
	resp, err := h.prompt(sess.SessionId, "/btw what is the answer?")
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("/btw: %+v, %v", resp, err)
	}
	if got := messageText(h.client.snapshot()); got != "working It is 42." {
		t.Errorf("chunks = %q", got)
	}
	close(gate)
	if r := <-first; r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("the run ended %q: the side question must not supersede it", r.StopReason)
	}
	// The side question is not in the session: the next request holds the
	// run's exchange only.
	if _, err := h.prompt(sess.SessionId, "next"); err != nil {
		t.Fatal(err)
	}
	if got := messageText(h.client.snapshot()); got != "working It is 42.done" {
		t.Errorf("chunks = %q", got)
	}
	for _, m := range script.Request(2).Messages {
		for _, c := range m.Content {
			if strings.Contains(c.Text, "what is the answer") || strings.Contains(c.Text, "It is 42.") {
				t.Errorf("the side question entered the session: %+v", m)
			}
		}
	}
	if _, err := h.prompt(sess.SessionId, "/btw"); err == nil {
		t.Error("/btw without a question was accepted")
	}
	var offered bool
	for _, n := range h.client.snapshot() {
		if u := n.Update.AvailableCommandsUpdate; u != nil {
			for _, c := range u.AvailableCommands {
				offered = offered || (c.Name == "btw" && c.Input != nil)
			}
		}
	}
	if !offered {
		t.Error("btw is not among the available commands")
	}
}

// TestSubagentIsToolCallContent: ACP has no nested sessions, so a
// subagent's work shows as its Agent call's content (its tool calls and
// last words), never as the agent's own message; its usage counts.
func TestSubagentIsToolCallContent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("p1"), modeltest.ToolUse(0, "agent1", "Agent", map[string]any{"description": "scout", "prompt": "look"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("c1"), modeltest.Text(0, "child says hi"), modeltest.ToolUse(1, "c-bash", "Bash", map[string]any{"command": "echo from-child"}), modeltest.Stop("tool_use")),
		modeltest.Answer("c2", "child report"),
		modeltest.Answer("p2", "parent done"),
	), harnessOpts{mode: protocol.ModeBypassPermissions, subagents: true})
	h.initialize(sdk.ClientCapabilities{})
	sess := h.newSession()
	if _, err := h.prompt(sess.SessionId, "delegate"); err != nil {
		t.Fatal(err)
	}
	ns := h.client.snapshot()
	if got := messageText(ns); got != "parent done" {
		t.Errorf("agent message %q: a subagent's text leaked into it", got)
	}
	starts, ups := toolUpdates(ns)
	if len(starts) != 1 || starts[0].ToolCallId != "agent1" {
		t.Fatalf("tool calls started: %+v (the subagent's must not be the session's)", starts)
	}
	var shown []string
	for _, u := range ups {
		if u.ToolCallId != "agent1" {
			t.Errorf("an update of %q, not of the Agent call", u.ToolCallId)
		}
		for _, c := range u.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				shown = append(shown, c.Content.Content.Text.Text)
			}
		}
	}
	all := strings.Join(shown, "\n---\n")
	for _, want := range []string{"✓ Bash echo from-child", "child says hi", "child report"} {
		if !strings.Contains(all, want) {
			t.Errorf("the Agent call's content lacks %q:\n%s", want, all)
		}
	}
	if lastStatus(ups) != sdk.ToolCallStatusCompleted {
		t.Errorf("the Agent call ended %q", lastStatus(ups))
	}
}
