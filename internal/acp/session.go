package acp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/mcp"
	"github.com/sluicehq/sluice/protocol"
)

// Config option ids.
const (
	configModel = "model"
	configMode  = "mode"
)

// modeInfo names sluice's permission modes as an ACP client shows them.
var modeInfo = []struct {
	mode        protocol.PermissionMode
	name, about string
}{
	{protocol.ModeDefault, "Default", "Read-only tools run; edits and commands ask first"},
	{protocol.ModeAcceptEdits, "Accept edits", "Edits in the working directory run too; commands ask first"},
	{protocol.ModePlan, "Plan", "Only read-only tools run: the agent researches and plans"},
	{protocol.ModeBypassPermissions, "Bypass permissions", "Everything runs without asking"},
}

// commands are the slash commands a prompt may start with.
var commands = []sdk.AvailableCommand{
	{Name: "compact", Description: "Fold the conversation into a summary to free the context"},
	{Name: "clear", Description: "Start the conversation afresh"},
	{Name: "rewind", Description: "Remove the last exchange (your last message and the answer)"},
	{Name: "btw", Description: "Ask a side question, answered without entering the conversation",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "the question"}}},
}

// session is one agent session attached to the connection. Its pump
// translates the session's events into session/update notifications, one
// goroutine per session so that each session's updates keep their order.
type session struct {
	srv *Server
	ag  *agent.Session
	mcp *mcp.Servers
	sub *agent.Subscription
	id  sdk.SessionId
	tr  translator

	ctx    context.Context // ends when the session is closed
	stop   context.CancelFunc
	pumped chan struct{} // closed when the pump has ended

	// replayed is the seq of the snapshot the session was attached at
	// (what a load replays).
	replayed int64

	mu        sync.Mutex
	sent      int64         // seq of the last event the pump has sent
	sentCh    chan struct{} // closed and replaced when sent moves
	rejected  map[string]bool
	asking    map[string]context.CancelFunc // permission request id → its request's cancel
	titled    bool
	cur       *turn // the prompt in progress
	terminals map[string]string
	// btwArrived counts the /btw prompts the input filter has seen.
	btwArrived int
}

// turn is one prompt's run.
type turn struct {
	h         *agent.Handle
	cancelled bool // session/cancel (or a newer prompt) stopped it; guarded by session.mu
	// btwSeen is session.btwArrived when the turn started.
	btwSeen int
}

// attach wires a session to the connection and starts its pump. With
// replay, the session's stored conversation is sent first. A connection
// that is closing gets no new session: it is closed at once.
func (s *Server) attach(ag *agent.Session, ms *mcp.Servers, ref *sessionRef, replay bool) (*session, error) {
	ctx, stop := context.WithCancel(s.ctx)
	ss := &session{
		srv: s, ag: ag, mcp: ms, id: sdk.SessionId(ag.ID()),
		ctx: ctx, stop: stop, pumped: make(chan struct{}),
		sentCh:    make(chan struct{}),
		rejected:  map[string]bool{},
		asking:    map[string]context.CancelFunc{},
		terminals: map[string]string{},
	}
	ss.tr = translator{workDir: ag.WorkDir(), terminal: ss.terminalOf}
	ref.set(ss)
	snap, sub := ag.SnapshotAndSubscribe(agent.SubscribeOptions{})
	ss.tr.list = protocol.NewList(snap)
	ss.sub = sub
	// Nothing counts as sent until the first updates are out.
	ss.sent = -1
	ss.replayed = snap.Seq
	ss.titled = slices.ContainsFunc(snap.Messages, func(m protocol.Message) bool { return m.Role == protocol.RoleUser })
	var first []sdk.SessionUpdate
	if replay {
		for _, m := range snap.Messages {
			first = append(first, ss.tr.messageUpdates(m, true)...)
		}
	}
	first = append(first, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: commands}})
	if replay && ss.titled {
		for _, m := range snap.Messages {
			if m.Role == protocol.RoleUser {
				first = append(first, titleUpdate(m))
				break
			}
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sub.Close()
		stop()
		closeMCP(ms)
		ag.Close()
		return nil, errClosing
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	// The replay goes out before any event after the snapshot: the pump
	// sends it first.
	go ss.pump(first, snap.Seq)
	return ss, nil
}

func titleUpdate(m protocol.Message) sdk.SessionUpdate {
	return sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: sdk.Ptr(title(m))}}
}

// pump sends first, then every event's updates, in order, until the
// session is closed.
func (ss *session) pump(first []sdk.SessionUpdate, snapSeq int64) {
	defer close(ss.pumped)
	for _, u := range first {
		if !ss.send(u) {
			return
		}
	}
	ss.markSent(snapSeq)
	for {
		ev, err := ss.sub.Next(ss.ctx)
		if err != nil {
			return
		}
		for _, u := range ss.extra(ev) {
			if !ss.send(u) {
				return
			}
		}
		ss.markSent(ev.Head().Seq)
	}
}

// extra is ev's updates plus what this face does on it: permission
// requests are asked, a first user message titles the session, a turn's
// end reports the usage.
func (ss *session) extra(ev protocol.Event) []sdk.SessionUpdate {
	if err := ss.tr.list.Apply(ev); err != nil && !errors.Is(err, protocol.ErrStale) {
		ss.tr.list.Reset(ss.ag.Messages()) // later events it holds are dropped as stale
	}
	ups := ss.tr.updates(ev)
	if ev.Head().ParentToolID != "" {
		// A subagent's: its permission requests are asked like any
		// other; its messages, turns and rewinds are not the session's.
		if e, ok := ev.(protocol.PermissionRequest); ok {
			ss.ask(e)
		}
		if _, ok := ev.(protocol.PermissionResolved); !ok {
			return ups
		}
	}
	switch e := ev.(type) {
	case protocol.PermissionRequest:
		ss.ask(e)
	case protocol.PermissionResolved:
		ss.mu.Lock()
		cancel := ss.asking[e.RequestID]
		delete(ss.asking, e.RequestID)
		ss.mu.Unlock()
		if cancel != nil {
			cancel() // answered elsewhere (an abort): withdraw the question
		}
	case protocol.UserMessageAdded:
		ss.mu.Lock()
		first := !ss.titled
		ss.titled = true
		ss.mu.Unlock()
		if first {
			ups = append(ups, titleUpdate(e.Message))
		}
	case protocol.TurnEnded:
		if e.Usage != nil {
			ups = append(ups, ss.usageUpdate(*e.Usage))
		}
	case protocol.MessagesCleared, protocol.MessagesRewound:
		// The context shrank: report what is left (nothing after a
		// clear), and let the next user message title the session anew
		// when no user message is left.
		var last protocol.Usage
		msgs := ss.ag.Messages().Messages
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Usage != nil {
				last = *msgs[i].Usage
				break
			}
		}
		ss.mu.Lock()
		ss.titled = slices.ContainsFunc(msgs, func(m protocol.Message) bool { return m.Role == protocol.RoleUser })
		ss.mu.Unlock()
		ups = append(ups, ss.usageUpdate(last))
	}
	return ups
}

// usageUpdate reports the context's size after a response and the
// session's cost so far, summed from the messages' usage.
func (ss *session) usageUpdate(last protocol.Usage) sdk.SessionUpdate {
	used := last.InputTokens + last.CacheReadInputTokens + last.CacheCreationInputTokens + last.OutputTokens
	total := usageOf(ss.ag.Messages().Messages)
	u := &sdk.SessionUsageUpdate{Used: used, Size: ss.contextWindow()}
	if c := ss.ag.CostUSD(total); c > 0 {
		u.Cost = &sdk.Cost{Amount: c, Currency: "USD"}
	}
	return sdk.SessionUpdate{UsageUpdate: u}
}

func (ss *session) contextWindow() int {
	if w := ss.srv.opts.Agent.ContextWindow; w > 0 {
		return w
	}
	return ss.ag.ModelContextWindow()
}

func (ss *session) send(u sdk.SessionUpdate) bool {
	err := ss.srv.conn.SessionUpdate(ss.ctx, sdk.SessionNotification{SessionId: ss.id, Update: u})
	if err != nil {
		ss.srv.log.Debug("session/update not sent", "session", ss.id, "err", err)
		return ss.ctx.Err() == nil
	}
	return true
}

func (ss *session) markSent(seq int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if seq > ss.sent {
		ss.sent = seq
	}
	close(ss.sentCh)
	ss.sentCh = make(chan struct{})
}

// waitSent waits until the pump has sent the updates of every event up to
// seq (and the replay), so that an answer never overtakes its updates.
func (ss *session) waitSent(ctx context.Context, seq int64) error {
	for {
		ss.mu.Lock()
		done, ch := ss.sent >= seq, ss.sentCh
		ss.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ss.pumped:
			return errUnknownSession(ss.id)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close stops the pump and closes the agent session and its MCP servers.
func (ss *session) close() error {
	ss.stop()
	ss.sub.Close()
	<-ss.pumped
	err := ss.ag.Close()
	if ss.mcp != nil {
		err = errors.Join(err, ss.mcp.Close())
	}
	return err
}

func (ss *session) terminalOf(toolID string) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.terminals[toolID]
}

func (ss *session) setTerminal(toolID, terminalID string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.terminals[toolID] = terminalID
}

// cancel aborts the prompt in progress (session/cancel).
func (ss *session) cancel() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur != nil {
		ss.cur.cancelled = true
	}
	ss.ag.Abort("cancelled by the client")
}

// cancelTurn aborts tr if it is still the prompt in progress. Holding mu
// while aborting keeps a newer prompt's work, submitted under mu, from
// being dropped by an older prompt's late cancel.
func (ss *session) cancelTurn(tr *turn) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur == tr {
		tr.cancelled = true
		ss.ag.Abort("cancelled by the client")
	}
}

// prompt runs one user message to its end.
func (ss *session) prompt(ctx context.Context, text string, images []agent.Image) (sdk.PromptResponse, error) {
	if q, ok := btwQuestion(text); ok && len(images) == 0 {
		// A side question supersedes nothing: a run in progress goes on.
		return ss.btw(ctx, q)
	}
	// A prompt still running was superseded (the SDK cancelled its
	// request): it ends, cancelled, before this one starts.
	ss.mu.Lock()
	prev := ss.cur
	ss.mu.Unlock()
	if prev != nil {
		ss.cancelTurn(prev)
		<-prev.h.Done()
	}
	if len(images) == 0 { // a message with images is no command
		if ok, err := ss.command(ctx, text); ok {
			if err != nil {
				return sdk.PromptResponse{}, invalidParams("%v", err)
			}
			if err := ss.waitSent(ctx, ss.ag.Seq()); err != nil {
				return sdk.PromptResponse{}, err
			}
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		}
	}
	ss.mu.Lock()
	h, err := ss.submit(ctx, text, images)
	tr := &turn{h: h, btwSeen: ss.btwArrived}
	if err == nil {
		ss.cur = tr
	}
	ss.mu.Unlock()
	if errors.Is(err, agent.ErrBadImage) {
		return sdk.PromptResponse{}, invalidParams("%v", err)
	}
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	select {
	case <-h.Done():
	case <-ctx.Done():
		// The SDK cancels a prompt's request when a newer prompt for the
		// session arrives ($/cancel_request too): the run stops, unless
		// the newer prompt is a side question (/btw), which the input
		// filter saw before the SDK did. The run then goes on, and a
		// later session/cancel still stops it.
		if !ss.btwSince(tr) {
			ss.cancelTurn(tr)
		} else {
			<-h.Done()
		}
	}
	res, runErr := h.Wait(context.WithoutCancel(ctx))
	// Every update of the run goes out before the answer.
	if err := ss.waitSent(context.WithoutCancel(ctx), ss.ag.Seq()); err != nil {
		if ss.ctx.Err() != nil {
			// The session was closed under the prompt (session/close, a
			// reload, the connection ending): the run was stopped.
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		return sdk.PromptResponse{}, err
	}
	ss.mu.Lock()
	cancelled := tr.cancelled
	if ss.cur == tr {
		ss.cur = nil
	}
	ss.mu.Unlock()
	switch {
	case cancelled || errors.Is(runErr, agent.ErrAborted):
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case errors.Is(runErr, agent.ErrMaxTurns):
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	case errors.Is(runErr, agent.ErrMaxTokens):
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case runErr != nil:
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": runErr.Error()})
	}
	switch res.StopReason {
	case "max_tokens":
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case "refusal":
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// submit queues the prompt: a !command or a message.
func (ss *session) submit(ctx context.Context, text string, images []agent.Image) (*agent.Handle, error) {
	if len(images) > 0 {
		return ss.ag.SubmitImages(ctx, text, images)
	}
	if cmd, ok := strings.CutPrefix(strings.TrimSpace(text), "!"); ok && strings.TrimSpace(cmd) != "" {
		return ss.ag.SubmitBang(ctx, strings.TrimSpace(cmd))
	}
	if strings.TrimSpace(text) == "/compact" {
		return ss.ag.SubmitCompact(ctx)
	}
	return ss.ag.Submit(ctx, text)
}

// btwSince reports whether a /btw prompt arrived since tr started.
func (ss *session) btwSince(tr *turn) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.btwArrived != tr.btwSeen
}

// btwQuestion is the question of a /btw prompt.
func btwQuestion(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if t != "/btw" && !strings.HasPrefix(t, "/btw ") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(t, "/btw")), true
}

// btw answers a side question from the session's context without entering
// it (agent.Session.Ask): the answer is this prompt's agent message, and
// the session neither records nor replays it.
func (ss *session) btw(ctx context.Context, question string) (sdk.PromptResponse, error) {
	if question == "" {
		return sdk.PromptResponse{}, invalidParams("/btw needs a question: /btw what does this function return?")
	}
	answer, err := ss.ag.Ask(ctx, question, nil)
	if ctx.Err() != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	ss.send(sdk.UpdateAgentMessageText(answer))
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// command runs the slash commands that are not queued work (they wait
// themselves); ok is false for any other prompt.
func (ss *session) command(ctx context.Context, text string) (ok bool, err error) {
	switch strings.TrimSpace(text) {
	case "/clear":
		return true, ss.ag.Clear(ctx)
	case "/rewind":
		return true, ss.rewind(ctx)
	}
	return false, nil
}

// rewind removes the last user message and what followed it.
func (ss *session) rewind(ctx context.Context) error {
	msgs := ss.ag.Messages().Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == protocol.RoleUser {
			return ss.ag.Rewind(ctx, msgs[i].ID)
		}
	}
	return errors.New("there is nothing to rewind")
}

// setMode changes the permission mode and tells the client.
func (ss *session) setMode(ctx context.Context, id string) error {
	m, err := protocol.ParsePermissionMode(id)
	if err != nil || id == "" {
		return invalidParams("unknown mode %q", id)
	}
	if err := ss.ag.SetPermissionMode(m); err != nil {
		return invalidParams("%v", err)
	}
	ss.send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(m)}})
	return nil
}

func (ss *session) modes() *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(ss.ag.PermissionMode())}
	for _, mi := range modeInfo {
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(mi.mode), Name: mi.name, Description: sdk.Ptr(mi.about)})
	}
	return st
}

// modelNames are the models offered: the configured ones and the current.
func (ss *session) modelNames() []string {
	names := slices.Clone(ss.srv.opts.Models)
	if cur := ss.ag.Model(); cur != "" && !slices.Contains(names, cur) {
		names = append([]string{cur}, names...)
	}
	return names
}

func (ss *session) models() *sdk.SessionModelState {
	names := ss.modelNames()
	if len(names) == 0 {
		return nil
	}
	st := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(ss.ag.Model())}
	for _, n := range names {
		st.AvailableModels = append(st.AvailableModels, sdk.ModelInfo{ModelId: sdk.ModelId(n), Name: n})
	}
	return st
}

func (ss *session) configOptions() []sdk.SessionConfigOption {
	var modeOpts sdk.SessionConfigSelectOptionsUngrouped
	for _, mi := range modeInfo {
		modeOpts = append(modeOpts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(mi.mode), Name: mi.name, Description: sdk.Ptr(mi.about)})
	}
	mode := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(ss.ag.PermissionMode()), sdk.SessionConfigSelectOptions{Ungrouped: &modeOpts})
	mode.Select.Id, mode.Select.Name, mode.Select.Category = configMode, "Mode", sdk.Ptr(sdk.SessionConfigOptionCategoryMode)
	out := []sdk.SessionConfigOption{mode}
	if names := ss.modelNames(); len(names) > 0 {
		var modelOpts sdk.SessionConfigSelectOptionsUngrouped
		for _, n := range names {
			modelOpts = append(modelOpts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(n), Name: n})
		}
		model := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(ss.ag.Model()), sdk.SessionConfigSelectOptions{Ungrouped: &modelOpts})
		model.Select.Id, model.Select.Name, model.Select.Category = configModel, "Model", sdk.Ptr(sdk.SessionConfigOptionCategoryModel)
		out = append(out, model)
	}
	return out
}

// usageOf sums the usage of msgs and of the subagents' messages nested in
// them: what the session has spent.
func usageOf(msgs []protocol.Message) protocol.Usage {
	var total protocol.Usage
	for _, m := range msgs {
		if m.Usage != nil {
			total = total.Add(*m.Usage)
		}
		for _, b := range m.Blocks {
			total = total.Add(usageOf(b.Messages))
		}
	}
	return total
}
