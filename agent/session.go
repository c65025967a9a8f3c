package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/tool"
)

// Errors of a run.
var (
	// ErrAborted: the run was stopped by Abort (or a newer forced send).
	ErrAborted = errors.New("aborted by the user")
	// ErrMaxTurns: the run used the number of model responses allowed.
	ErrMaxTurns = errors.New("reached the maximum number of turns")
	// ErrMaxTokens: the model kept hitting its output limit.
	ErrMaxTokens = errors.New("the response kept hitting the output token limit")
	// ErrNotUserMessage: Rewind's anchor is not a user message.
	ErrNotUserMessage = errors.New("can only rewind to a user message")
	// ErrUnknownMessage: no message has that id.
	ErrUnknownMessage = errors.New("no such message")
	// ErrUnknownRequest: no permission request has that id (it may have
	// been answered already).
	ErrUnknownRequest = errors.New("no pending permission request with that id")
)

// Result is the outcome of one user message's run.
type Result struct {
	// MessageID is the user message's id.
	MessageID string
	// Text is the final answer: the text of the last assistant message,
	// joined to the text of the responses before it that max_tokens cut
	// and the agent continued. When the run fails (Err), it is how far the
	// answer got: the failed response's text so far, after any cut parts;
	// empty when it produced none or the failure came between rounds.
	Text string
	// StopReason is the last model response's stop reason.
	StopReason string
	// Continued is the stop reason (max_tokens,
	// model_context_window_exceeded) of the first response that was cut
	// and continued automatically, when Text joins such parts; else "".
	Continued string
	// Turns counts the model responses.
	Turns int
	// Usage sums the responses' tokens.
	Usage protocol.Usage
	// CostUSD estimates the cost from the model's list price (0 when
	// unknown).
	CostUSD float64
	// APIDuration is the time spent waiting for the model.
	APIDuration time.Duration
	// Denials lists the tool calls refused by permissions.
	Denials []Denial
	// FallbackModel is the fallback model (Options.Stream.FallbackModels)
	// the run switched to because its model was unavailable; the rest of
	// the run used it. "" when it did not switch.
	FallbackModel string
	// Subagents are the child sessions the run's Agent calls ran, in the
	// order they ended. CostUSD includes theirs; Usage is the run's own
	// responses only (as Claude Code's result reports it).
	Subagents []SubagentRun
	// Err is why the run failed, or nil.
	Err error
	// SteeredInto is, for a message sent while a run was going that joined
	// it at a model request (steering), the id of the message whose run it
	// joined; the result is that run's. "" for a run of its own.
	SteeredInto string
}

// Denial is a tool call refused by permissions.
type Denial struct {
	ToolID string `json:"tool_use_id"`
	Name   string `json:"tool_name"`
	Input  string `json:"tool_input"`
}

// Session is one agent session.
type Session struct {
	id   string
	opts Options
	bus  *bus
	log  *journal // nil when not persisted

	tools   []tool.Tool
	toolEnv tool.Env

	transcript string // the session file's path, for hooks ("" if none)
	hookID     string // the session id hooks hear: a child's is its root's

	// A child session (a subagent) has the session that started it and
	// the id of the tool call it runs in: its events are published on the
	// parent's stream too, naming that call (protocol.Header.ParentToolID).
	parent      *Session
	parentTool  string
	notifying   sync.WaitGroup     // Notification hooks under way; Close waits
	hooksCtx    context.Context    // of Notification hooks; cancelled by Close
	hooksCancel context.CancelFunc //

	wake    chan struct{} // capacity 1: "the queue may have work"
	closing chan struct{}
	done    chan struct{}

	mu        sync.Mutex // guards the fields below; taken before bus.mu
	model     string
	mode      protocol.PermissionMode
	always    map[string]bool // tools allowed for the rest of the session
	ctxMsgs   []model.Message // the model's context
	epoch     int             // bumped when the context is rebuilt
	marks     map[string]ctxMark
	queued    []*job
	current   *job
	waiters   map[string]*waiter // pending permission requests
	ctxTokens int                // estimate of the context's size
	closed    bool
	titled    bool
	// Hooks' state: the SessionStart source still to fire before the next
	// message ("" once fired), and a halt asked for by a hook.
	startSource string
	halted      bool
	haltReason  string
	// ending is set by a tool call whose result ends the run
	// (tool.Result.EndsRun) once its response's calls are done.
	ending bool
	// queueShown is how many jobs the last queueChanged listed.
	queueShown int
	// children are the subagents running now, by tool call id (their
	// permission requests are answered through this session); subRuns
	// are those that ended during the current run.
	children map[string]*Session
	subRuns  []SubagentRun
}

// ctxMark remembers where the context stood when a user message was added,
// so that a rewind can cut the context at the same point.
type ctxMark struct {
	Epoch int `json:"epoch"`
	Len   int `json:"len"`
}

type jobKind int

const (
	jobMessage jobKind = iota
	jobBang
	jobCompact
	jobRewind
	jobClear
)

// visible reports whether the job shows as a run (runStateChanged).
func (k jobKind) visible() bool { return k <= jobCompact }

type job struct {
	kind   jobKind
	id     string // user message id for messages and bangs; anchor for rewinds
	text   string
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	result Result
	images []Image // a message's images
	// steered are the messages that joined this run at a model request
	// (Session.steer); they end with it. Only the worker touches it.
	steered []*job
	// shown says the job was queued behind other work, so faces list it
	// as queued (queueChanged) until it is sent. Guarded by Session.mu.
	shown bool
}

// queueKinds are the kinds of jobs queueChanged lists: work a user sent.
var queueKinds = map[jobKind]protocol.QueueKind{
	jobMessage: protocol.QueueMessage, jobBang: protocol.QueueBang, jobCompact: protocol.QueueCompact,
}

// queueChangedLocked publishes the jobs waiting behind other work, when
// that list changed from the one last published. A job that starts at once
// is never listed, so a session used one message at a time publishes no
// queueChanged at all. Called with s.mu held, after s.queued changed.
func (s *Session) queueChangedLocked() {
	var q []protocol.QueuedWork
	for _, j := range s.queued {
		if k, ok := queueKinds[j.kind]; ok && j.shown {
			w := protocol.QueuedWork{Kind: k, Text: j.text}
			if j.kind != jobCompact {
				w.MessageID = j.id
			}
			q = append(q, w)
		}
	}
	if len(q) == 0 && s.queueShown == 0 {
		return
	}
	s.queueShown = len(q)
	s.publish(protocol.QueueChanged{Queued: q})
}

// New starts a new session.
func New(opts Options) (*Session, error) {
	s, err := newSession(opts, opts.SessionID)
	if err != nil {
		return nil, err
	}
	if s.opts.Store != nil {
		l, err := s.opts.Store.Create(context.Background(), store.Key{WorkDir: s.toolEnv.WorkDir, ID: s.id})
		if err != nil {
			return nil, err
		}
		meta, err := encodeRecord(record{Type: recMeta, Time: s.now(), Meta: &metaRecord{
			ID: s.id, WorkDir: s.toolEnv.WorkDir, Provider: opts.Provider.Name(), Model: s.model, Version: 1,
		}})
		if err == nil {
			err = l.Append(context.Background(), meta)
		}
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("%w: %w", ErrNotSaved, err)
		}
		s.log = newJournal(l)
	}
	s.start()
	return s, nil
}

func newSession(opts Options, id string) (*Session, error) {
	if opts.Provider == nil {
		return nil, errors.New("agent: Options.Provider is required")
	}
	opts.setDefaults()
	if id == "" {
		id = opts.NewID()
	}
	if _, err := protocol.ParsePermissionMode(string(opts.PermissionMode)); err != nil {
		return nil, err
	}
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if st, err := os.Stat(wd); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("agent: working directory %s is not a directory", wd)
	}
	ts := opts.Tools
	if ts == nil {
		ts = tools.BuiltinsIn(wd)
	}
	ts = append(append([]tool.Tool(nil), ts...), opts.ExtraTools...)
	opts.Memory = append([]MemoryFile(nil), opts.Memory...) // the caller's slice may change
	s := &Session{
		id:      id,
		opts:    opts,
		bus:     newBus(id, protocol.Snapshot{Messages: []protocol.Message{}}),
		tools:   ts,
		toolEnv: tool.Env{WorkDir: wd, AllowedDirs: opts.AllowedDirs, Environ: toolEnviron(opts.ChildEnv)},
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		model:   opts.Model,
		mode:    opts.PermissionMode,
		always:  map[string]bool{},
		marks:   map[string]ctxMark{},
		waiters: map[string]*waiter{},

		startSource: "startup",
		children:    map[string]*Session{},
	}
	s.hookID = id
	if opts.Subagents != nil {
		s.tools = append(s.tools, &agentTool{s: s})
	}
	s.hooksCtx, s.hooksCancel = context.WithCancel(context.Background())
	if st, ok := opts.Store.(interface {
		Path(store.Key) (string, error)
	}); ok {
		s.transcript, _ = st.Path(store.Key{WorkDir: wd, ID: id})
	}
	return s, nil
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// WorkDir is the session's working directory.
func (s *Session) WorkDir() string { return s.toolEnv.WorkDir }

// Model is the model in use ("" when the provider chooses).
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// SetModel changes the model for the next requests.
func (s *Session) SetModel(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = name
}

// SetThinkingBudget sets the extended thinking budget of the next
// requests (0: off).
func (s *Session) SetThinkingBudget(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.ThinkingBudget = max(tokens, 0)
}

// PermissionMode is the current mode.
func (s *Session) PermissionMode() protocol.PermissionMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetPermissionMode changes the mode for the next tool calls.
func (s *Session) SetPermissionMode(m protocol.PermissionMode) error {
	if _, err := protocol.ParsePermissionMode(string(m)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
	return nil
}

// Tools returns the names of the session's tools.
func (s *Session) Tools() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.Name()
	}
	return names
}

func (s *Session) now() int64 { return s.opts.Now().UnixMilli() }

func (s *Session) start() {
	if s.parent == nil { // a child shares its parent's tools and their watcher
		s.watchTasks()
	}
	go s.worker()
}

// worker runs the jobs one after another, publishing runStateChanged when
// it goes from idle to running and back. A job's done channel closes after
// the idle event, so a caller of Run sees the session idle.
func (s *Session) worker() {
	defer close(s.done)
	running := false
	for {
		s.mu.Lock()
		var j *job
		if len(s.queued) > 0 {
			j = s.queued[0]
			s.queued = s.queued[1:]
			s.queueChangedLocked()
		}
		s.current = j
		s.mu.Unlock()
		if j == nil {
			select {
			case <-s.wake:
				continue
			case <-s.closing:
				return
			}
		}
		if !running && j.kind.visible() {
			running = true
			s.publish(protocol.RunStateChanged{State: protocol.RunRunning})
		}
		s.runJob(j)
		s.mu.Lock()
		s.current = nil
		idle := len(s.queued) == 0
		s.mu.Unlock()
		if idle && running {
			running = false
			s.publish(protocol.RunStateChanged{State: protocol.RunIdle})
		}
		for _, m := range j.steered {
			m.result = j.result
			m.result.MessageID = m.id
			m.result.SteeredInto = j.id
			m.cancel(nil)
			close(m.done)
		}
		close(j.done)
	}
}

func (s *Session) runJob(j *job) {
	switch j.kind {
	case jobMessage:
		_ = s.saveErr() // reported by the run it happened in
		j.result = s.runMessage(j)
		s.reportSaveErr(&j.result)
	case jobBang:
		_ = s.saveErr()
		j.result = s.runBang(j)
		s.reportSaveErr(&j.result)
	case jobCompact:
		s.fire(j.ctx, EventPreCompact, "manual", map[string]any{"trigger": "manual", "custom_instructions": ""})
		j.result.Err = s.compact(j.ctx)
	case jobRewind:
		j.result.Err = s.rewind(j.id)
	case jobClear:
		s.fire(j.ctx, EventSessionEnd, "clear", map[string]any{"reason": "clear"})
		s.clear()
	}
	j.cancel(nil)
}

// enqueue adds a job and wakes the worker.
func (s *Session) enqueue(ctx context.Context, kind jobKind, text string) (*job, error) {
	return s.enqueueWith(ctx, kind, text, nil)
}

// enqueueWith is enqueue with set called on the job before it is queued.
func (s *Session) enqueueWith(ctx context.Context, kind jobKind, text string, set func(*job)) (*job, error) {
	jctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	j := &job{kind: kind, text: text, ctx: jctx, cancel: cancel, done: make(chan struct{})}
	if set != nil {
		set(j)
	}
	switch kind {
	case jobMessage, jobBang:
		j.id = s.opts.NewID()
	case jobRewind:
		j.id = text
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(ErrClosed)
		return nil, ErrClosed
	}
	// Work sent while other work runs or waits is listed as queued until
	// it is sent.
	j.shown = s.current != nil || len(s.queued) > 0
	s.queued = append(s.queued, j)
	if j.shown {
		s.queueChangedLocked()
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
	return j, nil
}

// Handle follows one queued piece of work.
type Handle struct {
	s *Session
	j *job
}

// ID is the id of the user message the work adds.
func (h *Handle) ID() string { return h.j.id }

// Done is closed when the work has ended (after the idle event, when
// nothing else is queued).
func (h *Handle) Done() <-chan struct{} { return h.j.done }

// Wait waits for the work to end and returns its result. If ctx is done
// first, the work is aborted (and Wait still returns its result).
func (h *Handle) Wait(ctx context.Context) (Result, error) { return h.s.wait(ctx, h.j) }

// Image is an image attached to a user message.
type Image struct {
	// MediaType is image/png, image/jpeg, image/gif or image/webp.
	MediaType string
	Data      []byte
}

// MaxImageBytes bounds one image: the Anthropic API's limit, which
// OpenAI-compatible servers stay within too.
const MaxImageBytes = 5 << 20

// ErrBadImage is returned by SubmitImages for an image no model API takes.
var ErrBadImage = errors.New("unsupported image")

// SubmitImages queues a user message with images, as Submit does.
func (s *Session) SubmitImages(ctx context.Context, text string, images []Image) (*Handle, error) {
	for i, img := range images {
		switch img.MediaType {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
		default:
			return nil, fmt.Errorf("%w: image %d is %q (want image/png, image/jpeg, image/gif or image/webp)", ErrBadImage, i+1, img.MediaType)
		}
		if len(img.Data) == 0 || len(img.Data) > MaxImageBytes {
			return nil, fmt.Errorf("%w: image %d has %d bytes (at most %d MiB)", ErrBadImage, i+1, len(img.Data), MaxImageBytes>>20)
		}
	}
	j, err := s.enqueueWith(ctx, jobMessage, text, func(j *job) { j.images = slices.Clone(images) })
	if err != nil {
		return nil, err
	}
	return &Handle{s: s, j: j}, nil
}

// Submit queues a user message and returns at once. A message sent while a
// run is going joins that run at its next model request, after the tool
// results of the current round (steering); otherwise it runs once the work
// before it ends.
func (s *Session) Submit(ctx context.Context, text string) (*Handle, error) {
	j, err := s.enqueue(ctx, jobMessage, text)
	if err != nil {
		return nil, err
	}
	return &Handle{s: s, j: j}, nil
}

// Run sends a user message and waits until its run ends. If ctx is done
// first, the run is aborted.
func (s *Session) Run(ctx context.Context, text string) (Result, error) {
	h, err := s.Submit(ctx, text)
	if err != nil {
		return Result{}, err
	}
	return h.Wait(ctx)
}

func (s *Session) wait(ctx context.Context, j *job) (Result, error) {
	select {
	case <-j.done:
		return j.result, j.result.Err
	case <-ctx.Done():
		j.cancel(fmt.Errorf("%w: %v", ErrAborted, context.Cause(ctx)))
		<-j.done
		return j.result, j.result.Err
	}
}

// Bang runs a shell command as the user: a user message holding the
// command plus a Bash tool block with its live output. It waits for the
// command to end.
func (s *Session) Bang(ctx context.Context, command string) (Result, error) {
	h, err := s.SubmitBang(ctx, command)
	if err != nil {
		return Result{}, err
	}
	return h.Wait(ctx)
}

// SubmitBang queues a shell command (see Bang) and returns at once; it runs
// in order with the messages queued before and after it.
func (s *Session) SubmitBang(ctx context.Context, command string) (*Handle, error) {
	j, err := s.enqueue(ctx, jobBang, command)
	if err != nil {
		return nil, err
	}
	return &Handle{s: s, j: j}, nil
}

// Compact folds the model's context into a summary (appended to the
// display list as a compact block) and waits for it.
func (s *Session) Compact(ctx context.Context) error {
	h, err := s.SubmitCompact(ctx)
	if err != nil {
		return err
	}
	_, err = h.Wait(ctx)
	return err
}

// SubmitCompact queues a compaction (see Compact) and returns at once.
func (s *Session) SubmitCompact(ctx context.Context) (*Handle, error) {
	j, err := s.enqueue(ctx, jobCompact, "")
	if err != nil {
		return nil, err
	}
	return &Handle{s: s, j: j}, nil
}

// Abort stops the work in progress (keeping what streamed) and drops the
// queued work. It returns without waiting; subscribers see the run end with
// runStateChanged idle. Work dropped before it started publishes nothing:
// wait on its Handle, not for an event.
func (s *Session) Abort(reason string) {
	cause := ErrAborted
	if reason != "" {
		cause = fmt.Errorf("%w: %s", ErrAborted, reason)
	}
	s.mu.Lock()
	queued := s.queued
	s.queued = nil
	s.queueChangedLocked()
	cur := s.current
	s.mu.Unlock()
	for _, j := range queued {
		j.result.Err = cause
		j.cancel(cause)
		close(j.done)
	}
	if cur != nil {
		cur.cancel(cause)
	}
}

// Interrupt stops the work in progress (keeping what streamed), as Abort
// does, but keeps the queued work: it runs next. Messages steered into the
// run end with it.
func (s *Session) Interrupt(reason string) {
	cause := ErrAborted
	if reason != "" {
		cause = fmt.Errorf("%w: %s", ErrAborted, reason)
	}
	s.mu.Lock()
	cur := s.current
	s.mu.Unlock()
	if cur != nil {
		cur.cancel(cause)
	}
}

// Rewind aborts the work in progress, then removes the last occurrence of
// the user message messageID and everything after it, from the display
// list (published as messagesRewound) and from the model's context.
func (s *Session) Rewind(ctx context.Context, messageID string) error {
	// A rewind that cannot be done must not stop the work in progress.
	if err := s.checkAnchor(messageID); err != nil {
		return err
	}
	s.Abort("rewind")
	j, err := s.enqueue(ctx, jobRewind, messageID)
	if err != nil {
		return err
	}
	_, err = s.wait(ctx, j)
	return err
}

// checkAnchor reports whether messageID is a user message of the list.
func (s *Session) checkAnchor(messageID string) error {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	i := s.bus.list.Index(messageID)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownMessage, messageID)
	}
	if s.bus.list.At(i).Role != protocol.RoleUser {
		return ErrNotUserMessage
	}
	return nil
}

// Running reports whether the last runStateChanged said running. Read it
// after SnapshotAndSubscribe: a change after the snapshot arrives as an
// event.
func (s *Session) Running() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.list.Running()
}

// Clear aborts the work in progress and empties the session (published as
// messagesCleared).
func (s *Session) Clear(ctx context.Context) error {
	s.Abort("clear")
	j, err := s.enqueue(ctx, jobClear, "")
	if err != nil {
		return err
	}
	_, err = s.wait(ctx, j)
	return err
}

// AnswerPermission answers a pending permission request.
func (s *Session) AnswerPermission(requestID string, decision protocol.Decision) error {
	switch decision {
	case protocol.DecisionAllow, protocol.DecisionAllowAlways, protocol.DecisionDeny:
	default:
		return fmt.Errorf("agent: unknown decision %q", decision)
	}
	s.mu.Lock()
	w, ok := s.waiters[requestID]
	delete(s.waiters, requestID)
	children := make([]*Session, 0, len(s.children))
	for _, c := range s.children {
		children = append(children, c)
	}
	s.mu.Unlock()
	if !ok {
		// A subagent's request reaches the faces through this session,
		// and so does the answer.
		for _, c := range children {
			if c.AnswerPermission(requestID, decision) == nil {
				return nil
			}
		}
		return ErrUnknownRequest
	}
	w.answer <- decision // buffered
	return nil
}

// waiter is a permission request waiting for its answer.
type waiter struct {
	req    protocol.PermissionRequest
	answer chan protocol.Decision // capacity 1
}

// PendingPermissions returns the permission requests that no
// permissionResolved has closed yet, oldest first, as the session's view
// state holds them (Messages carries the same with its seq).
func (s *Session) PendingPermissions() []protocol.PermissionRequest {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.list.PendingPermissions()
}

// Close aborts the work in progress, stops the session and closes every
// subscription (their queued events stay readable) and the session file.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.Abort("session closed")
	close(s.closing)
	<-s.done
	s.hooksCancel()
	s.notifying.Wait()
	s.fire(context.Background(), EventSessionEnd, "other", map[string]any{"reason": "other"})
	if s.parent == nil { // a child's tools are its parent's, and so is their work
		s.StopTasks()
	}
	s.bus.closeAll()
	if s.log != nil {
		return s.log.close()
	}
	return nil
}

// publish applies ev to the session's list and delivers it.
func (s *Session) publish(ev protocol.Event) protocol.Event {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.publishLocked(ev)
}

// publishText is publish for a text delta, the event a stream is mostly
// made of (publishReasoning for a reasoning one): its header is set
// before it becomes an Event, so that the bus need not copy it into a new
// one to number it.
func (s *Session) publishText(ev protocol.AssistantContentUpdated) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	ev.Header = s.bus.nextHeader(ev.ParentToolID)
	s.publishLocked(ev)
}

func (s *Session) publishReasoning(ev protocol.AssistantReasoningUpdated) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	ev.Header = s.bus.nextHeader(ev.ParentToolID)
	s.publishLocked(ev)
}

// publishLocked is publish with bus.mu held.
func (s *Session) publishLocked(ev protocol.Event) protocol.Event {
	out, err := s.bus.publishLocked(ev)
	if err != nil {
		// An event that does not fit the agent's own list is a bug in the
		// agent; say so loudly rather than corrupting every consumer.
		panic(fmt.Sprintf("agent: published an inconsistent event: %v", err))
	}
	if s.log != nil && journaled(out) {
		s.log.addEvent(out)
	}
	s.forward(out)
	return out
}

func (s *Session) publishPart(p model.Part) { s.publishPartOf(p, "") }

// publishPartOf delivers a model part of this session's stream, or of the
// child session that runs in call parentTool.
func (s *Session) publishPartOf(p model.Part, parentTool string) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.bus.publishPartLocked(p, parentTool)
	s.forwardPart(p, parentTool)
}

// persist writes records to the store after everything streamed before
// them, and waits until they are durable. A failure is logged and kept for
// the run's result (ErrNotSaved): the session goes on in memory.
func (s *Session) persist(recs ...record) {
	if s.log == nil || len(recs) == 0 {
		return
	}
	s.log.addRecords(recs)
	s.flush()
}

// persistMessage is persist with a record of message id's current state
// first. The copy is taken and queued under bus.mu, so that the record
// stands exactly after the events it reflects; the journal writes it as a
// commit (no second copy of the text) when the log holds those events,
// and the context records of more made by contextRecord(id, ...) with
// their texts located in that message.
func (s *Session) persistMessage(id string, mark *ctxMark, more ...record) {
	if s.log == nil {
		return
	}
	s.bus.mu.Lock()
	i := s.bus.list.Index(id)
	var m protocol.Message
	if id != "" && i >= 0 {
		m = s.bus.list.At(i)
		s.log.addMessage(record{Type: recMessage, Time: s.now(), Message: &m, Mark: mark})
	}
	for k := range more {
		if r := &more[k]; r.refOf != "" {
			if r.refOf != id || i < 0 {
				r.refOf = ""
				continue
			}
			locateTexts(r, m)
		}
	}
	s.log.addRecords(more)
	s.bus.mu.Unlock()
	s.flush()
}

func (s *Session) flush() {
	if err := s.log.flush(); err != nil {
		s.opts.Logger.Error("session file write failed", "session", s.id, "err", err)
	}
}

// reportSaveErr makes a failure to save the session during a run part of
// its result and of the display: a run whose answer was not saved must not
// look like a success (a full disk while print mode runs exits non-zero).
func (s *Session) reportSaveErr(res *Result) {
	err := s.saveErr()
	if err == nil {
		return
	}
	s.noteOnLast(err.Error())
	s.flush()
	_ = s.saveErr() // the note itself could not be saved either
	if res.Err == nil {
		res.Err = err
	} else {
		res.Err = errors.Join(res.Err, err)
	}
}

// saveErr returns the first failure to save the session since it was last
// called (nil when not persisted).
func (s *Session) saveErr() error {
	if s.log == nil {
		return nil
	}
	return s.log.takeErr()
}
