package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// Kinds of the messages the relay itself writes, besides route's.
const (
	KindCommand    route.Kind = "command"    // an answer to a chat command
	KindPermission route.Kind = "permission" // a tool approval request
	KindNotice     route.Kind = "notice"     // "still working"
	// KindInterrupted tells a chat that the relay stopped (crashed) while
	// the agent answered its question.
	KindInterrupted route.Kind = "interrupted"
)

// Options configure a relay.
type Options struct {
	Channel channel.Channel // required
	Backend backend.Backend // required
	Store   *store.Store    // required
	Pacing  deliver.Pacing
	Clock   model.Clock  // default model.SystemClock
	Logger  *slog.Logger // default: discarded
	// Allow lists the chats that may use the agent; empty allows every
	// chat (the command line refuses that unless asked explicitly).
	Allow []string
	// Silence is how long a run may go without a message before the relay
	// says it is still working (default 5 minutes; negative: never).
	Silence time.Duration
	// TypingEvery refreshes the typing indicator while the agent works
	// (default 5 s, Telegram's indicator lifetime).
	TypingEvery time.Duration
	// Interrupt makes a new message abort the run in progress, as the
	// seed's bridge does; by default it waits its turn.
	Interrupt bool
}

// Relay connects a channel's chats to agent conversations.
type Relay struct {
	opts  Options
	queue *deliver.Queue

	mu    sync.Mutex
	ctx   context.Context // Run's: the chats' workers live as long
	chats map[string]*chat
	wg    sync.WaitGroup
}

// job is a unit of work of a chat's worker: a user message (with its row
// in the store's inbox, 0 when it could not be stored), or a compaction.
type job struct {
	question int64
	text     string
	compact  bool
	// run is the job's run when it was steered into the conversation and
	// got a run of its own (backend.SteeredRun).
	run backend.Run
}

// steeredJob is a question given to the agent while a run went on
// (backend.Steerer): msgID is the user message it becomes once sent.
type steeredJob struct {
	question int64
	msgID    string
	sent     bool // its userMessageAdded was seen
}

type chat struct {
	id   string
	wake chan struct{}

	mu   sync.Mutex
	conv backend.Conversation
	jobs []job
	// steered are the questions given to the agent during the run in
	// progress, not settled yet, in order.
	steered []steeredJob
	running bool // the worker has taken a question
	started bool // and its run started: Abort reaches it
	// abortReason is an abort asked for the question taken, applied when
	// its run starts if it had not yet.
	abortReason string
	// perms are the approval requests of the run in progress as its
	// router's list holds them after its last event: a copy for the
	// commands, which run on the receiving goroutine.
	perms []protocol.PermissionRequest
}

// abort stops the question in progress — at once, or as soon as its run
// starts — and reports whether there was one.
func (c *chat) abort(reason string) bool {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return false
	}
	if c.abortReason == "" {
		c.abortReason = reason
	}
	conv, started := c.conv, c.started
	c.mu.Unlock()
	if started {
		conv.Abort(reason)
	}
	return true
}

// begin records that the run of the question taken started and returns
// the abort asked for it meanwhile ("" for none).
func (c *chat) begin() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = true
	return c.abortReason
}

func (c *chat) setPerms(p []protocol.PermissionRequest) {
	c.mu.Lock()
	c.perms = p
	c.mu.Unlock()
}

// New returns a relay; undelivered messages from before are queued again.
func New(ctx context.Context, opts Options) (*Relay, error) {
	if opts.Channel == nil || opts.Backend == nil || opts.Store == nil {
		return nil, errors.New("relay: Channel, Backend and Store are required")
	}
	if opts.Clock == nil {
		opts.Clock = model.SystemClock
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Silence == 0 {
		opts.Silence = 5 * time.Minute
	}
	if opts.TypingEvery <= 0 {
		opts.TypingEvery = 5 * time.Second
	}
	r := &Relay{opts: opts, chats: map[string]*chat{}}
	q, err := deliver.New(ctx, opts.Store, opts.Channel.Name(), opts.Channel, opts.Pacing, opts.Clock, deliver.Hooks{}, opts.Logger)
	if err != nil {
		return nil, err
	}
	r.queue = q
	return r, nil
}

// Queue is the relay's outbox (for tests and status).
func (r *Relay) Queue() *deliver.Queue { return r.queue }

// Run receives, runs and delivers until ctx is done or the channel cannot
// receive any more, then waits for the chats' workers (a run in progress
// is aborted and what it produced is stored for the next start). It
// returns ctx's error, or why receiving stopped.
func (r *Relay) Run(ctx context.Context) error {
	if err := r.opts.Store.Forget(ctx, r.opts.Clock.Now().Add(-7*24*time.Hour)); err != nil {
		r.opts.Logger.Warn("relay: cannot prune old inbound keys", "err", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	if err := r.restore(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.queue.Run(ctx) }()
	go func() {
		defer wg.Done()
		var err error
		if a, ok := r.opts.Channel.(channel.Acceptor); ok {
			err = a.ReceiveAccepting(ctx, r.accept)
		} else {
			err = r.opts.Channel.Receive(ctx, r.handle)
		}
		if ctx.Err() != nil {
			return
		}
		// Receive retries what can be retried; returning early means the
		// channel cannot receive at all (a revoked token, an address it
		// cannot listen on): the relay stops with that cause.
		if err == nil {
			err = errors.New("stopped receiving")
		}
		err = fmt.Errorf("cannot receive from %s: %w", r.opts.Channel.Name(), err)
		r.opts.Logger.Error("relay: stopping", "err", err)
		cancel(err)
	}()
	<-ctx.Done()
	wg.Wait()
	r.wg.Wait()
	return context.Cause(ctx)
}

// restore takes up the questions of the store's inbox, left by a relay
// that stopped before answering them: those not started wait their turn
// again; those the agent was answering when the relay died are not run
// twice (their tools may have run already), and the chat is told.
func (r *Relay) restore(ctx context.Context) error {
	qs, err := r.opts.Store.Questions(ctx, r.opts.Channel.Name())
	if err != nil {
		return err
	}
	for _, q := range qs {
		if !q.Started {
			r.ask(q)
			continue
		}
		r.opts.Logger.Warn("relay: a question was being answered when the relay stopped; telling the chat", "chat", q.Chat)
		r.reply(ctx, q.Chat, []deliver.Message{{Kind: string(KindInterrupted), Text: interrupted(q.Text)}}, q.ID)
	}
	if len(qs) > 0 {
		r.opts.Logger.Info("relay: questions from before", "count", len(qs))
	}
	return nil
}

// interrupted is what a chat is told about a question whose answer a
// crash cut off.
func interrupted(question string) string {
	if q := []rune(question); len(q) > 200 {
		question = string(q[:200]) + "…"
	}
	return fmt.Sprintf("⚠️ The relay stopped while the agent was answering “%s”; the answer was cut off. Send it again to retry.", question)
}

// handle takes one inbound message (Channel.Receive's callback): see
// accept.
func (r *Relay) handle(ctx context.Context, in channel.Inbound) {
	if err := r.accept(ctx, in); err != nil {
		r.opts.Logger.Warn("relay: inbound message refused", "chat", in.Chat, "err", err)
	}
}

// accept takes one inbound message: de-duplicated, checked against the
// allow list, then a command or a question for the chat's worker. It
// refuses the message, doing nothing, only when the store is fenced (in
// cluster mode this node lost the channel: the node that took it handles
// the message when the platform delivers it again); any other storage
// failure is logged and the message handled all the same.
func (r *Relay) accept(ctx context.Context, in channel.Inbound) error {
	log := r.opts.Logger
	allowed := len(r.opts.Allow) == 0 || slices.Contains(r.opts.Allow, in.Chat)
	text := strings.TrimSpace(in.Text)
	if allowed && text != "" && !isCommand(text) {
		// A question is marked seen and stored in the inbox in one step:
		// from now on a crash cannot make it vanish.
		q, fresh, err := r.opts.Store.Ask(ctx, in.Key, store.Question{Channel: r.opts.Channel.Name(), Chat: in.Chat, Text: text, Created: r.opts.Clock.Now()})
		switch {
		case errors.Is(err, store.ErrFenced):
			return err
		case err != nil:
			// Answered all the same; only a crash before the answer
			// would lose it now.
			log.Error("relay: cannot record a question", "err", err)
			q = store.Question{Chat: in.Chat, Text: text}
		case !fresh:
			log.Debug("relay: duplicate inbound message dropped", "chat", in.Chat)
			return nil
		}
		r.queue.Wake(in.Chat)
		r.ask(q)
		return nil
	}
	if in.Key != "" {
		fresh, err := r.opts.Store.Claim(ctx, r.opts.Channel.Name(), in.Key, r.opts.Clock.Now())
		switch {
		case errors.Is(err, store.ErrFenced):
			return err
		case err != nil:
			log.Error("relay: cannot record an inbound message", "err", err)
		case !fresh:
			log.Debug("relay: duplicate inbound message dropped", "chat", in.Chat)
			return nil
		}
	}
	if !allowed {
		log.Warn("relay: message from a chat not allowed", "chat", in.Chat)
		r.say(ctx, in.Chat, KindCommand, fmt.Sprintf("This bot is private. Its owner can allow this chat with --allow %s.", in.Chat))
		return nil
	}
	r.queue.Wake(in.Chat)
	if text != "" {
		r.command(ctx, r.chat(in.Chat), text)
	}
	return nil
}

// ask queues a question for its chat's worker. While a run of an agent
// that takes messages mid-run goes on, and nothing else waits, the
// question goes to the agent at once: it reads it at the run's next model
// request (steering), and the run's answer answers both.
func (r *Relay) ask(q store.Question) {
	c := r.chat(q.Chat)
	r.mu.Lock()
	ctx := r.ctx
	r.mu.Unlock()
	c.mu.Lock()
	if sr, ok := c.conv.(backend.Steerer); ok && c.running && c.started && len(c.jobs) == 0 && !r.opts.Interrupt {
		id, err := sr.Steer(context.WithoutCancel(ctx), q.Text)
		if err == nil {
			c.steered = append(c.steered, steeredJob{question: q.ID, msgID: id})
			c.mu.Unlock()
			return
		}
		r.opts.Logger.Warn("relay: cannot steer a question into the run; it waits for the run's end", "chat", q.Chat, "err", err)
	}
	c.jobs = append(c.jobs, job{question: q.ID, text: q.Text})
	c.mu.Unlock()
	if r.opts.Interrupt {
		c.abort("interrupted by a new message")
	}
	c.poke()
}

// drop removes the questions of jobs from the inbox (the user withdrew
// them).
func (r *Relay) drop(ctx context.Context, jobs []job) {
	var ids []int64
	for _, j := range jobs {
		if j.question != 0 {
			ids = append(ids, j.question)
		}
	}
	if err := r.opts.Store.Drop(ctx, ids...); err != nil {
		r.opts.Logger.Error("relay: cannot drop withdrawn questions", "err", err)
	}
}

// chat returns the chat's state, starting its worker on first use. The
// worker lives as long as Run, not as the message that started it.
func (r *Relay) chat(id string) *chat {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.chats[id]
	if c == nil {
		c = &chat{id: id, wake: make(chan struct{}, 1)}
		r.chats[id] = c
		ctx := r.ctx
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.work(context.WithoutCancel(ctx), ctx.Done(), c) }()
	}
	return c
}

func (c *chat) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// conversation opens the chat's conversation on first use.
func (r *Relay) conversation(ctx context.Context, c *chat) (backend.Conversation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conv == nil {
		conv, err := r.opts.Backend.Open(ctx, c.id)
		if err != nil {
			return nil, err
		}
		c.conv = conv
	}
	return c.conv, nil
}

// work runs the chat's jobs one after another until stop closes. ctx is
// not cancelled by stop, so that what a run produced is stored even while
// the relay shuts down.
func (r *Relay) work(ctx context.Context, stop <-chan struct{}, c *chat) {
	for {
		c.mu.Lock()
		var j *job
		if len(c.jobs) > 0 {
			j = &c.jobs[0]
			c.jobs = c.jobs[1:]
			if !j.compact {
				c.running, c.started, c.abortReason = true, false, ""
			}
		}
		c.mu.Unlock()
		if j == nil {
			select {
			case <-stop:
				return
			case <-c.wake:
				continue
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		if !j.compact && j.question != 0 {
			if err := r.opts.Store.Start(ctx, j.question); err != nil {
				r.opts.Logger.Error("relay: cannot mark a question started", "err", err)
			}
		}
		conv, err := r.conversation(ctx, c)
		switch {
		case err != nil:
			r.reply(ctx, c.id, []deliver.Message{{Kind: string(route.Error), Text: "⚠️ cannot start the agent: " + err.Error()}}, j.question)
		case j.compact:
			msg := "Context compacted."
			if err := conv.Compact(ctx); err != nil {
				msg = "⚠️ compaction failed: " + err.Error()
			}
			r.say(ctx, c.id, KindCommand, msg)
		default:
			r.run(ctx, stop, c, conv, j)
		}
		c.mu.Lock()
		c.running, c.started, c.abortReason, c.perms = false, false, "", nil
		c.mu.Unlock()
	}
}

// run drives one question through the agent and routes what it says: the
// interstitials as they come, the rest with the question's leaving the
// inbox.
func (r *Relay) run(ctx context.Context, stop <-chan struct{}, c *chat, conv backend.Conversation, j *job) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			// Shutting down: stop the agent; what it produced is kept.
			c.abort("the relay is stopping")
		case <-runCtx.Done():
		}
	}()
	rn := j.run
	if rn == nil {
		var err error
		if rn, err = conv.Start(runCtx, j.text); err != nil {
			r.reply(ctx, c.id, []deliver.Message{{Kind: string(route.Error), Text: "⚠️ " + err.Error()}}, j.question)
			return
		}
	}
	defer rn.Close()
	if reason := c.begin(); reason != "" {
		// Stopped while the run was starting.
		conv.Abort(reason)
	}
	w := r.watch(runCtx, c.id)
	rt := route.New(r.opts.Channel.Limit())
	// A short remark waits for the next message as long as the pacing
	// would have kept that one apart from it.
	jn := newJoiner(func(kind route.Kind, text string) { r.say(ctx, c.id, kind, text) },
		r.opts.Clock, max(r.opts.Pacing.MinInterval, r.opts.Pacing.ChatInterval), r.opts.Channel.Limit())
	for {
		ev, err := rn.Next(runCtx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.opts.Logger.Error("relay: reading the run", "chat", c.id, "err", err)
			}
			break
		}
		// Activity is recorded before the message is queued: once it
		// is queued it may be delivered, and the silence watcher must
		// not count the quiet from before it.
		for _, m := range rt.Apply(ev) {
			w.activity()
			jn.say(m)
		}
		switch e := ev.(type) {
		case protocol.UserMessageAdded:
			// A steered question is sent: were the relay to die now, it
			// must not run again.
			if q := c.steeredQuestion(e.Message.ID); q != 0 {
				if err := r.opts.Store.Start(ctx, q); err != nil {
					r.opts.Logger.Error("relay: cannot mark a question started", "err", err)
				}
			}
		case protocol.PermissionRequest:
			c.setPerms(rt.PendingPermissions())
			w.activity()
			jn.say(route.Message{Kind: KindPermission, Text: permissionPrompt(e)})
		case protocol.PermissionResolved:
			c.setPerms(rt.PendingPermissions())
		}
	}
	// The remark still held leads the final answer, packed with it.
	rt.Lead(jn.take())
	jn.stop()
	var rest []deliver.Message
	for _, m := range rt.Finish(rn.Result()) {
		rest = append(rest, deliver.Message{Kind: string(m.Kind), Text: m.Text})
	}
	r.reply(ctx, c.id, rest, j.question)
	w.stop()
	if sr, ok := rn.(backend.SteeredRun); ok {
		r.settle(ctx, c, sr)
	}
}

// settle takes out of the inbox the steered questions the run answered
// and those an abort dropped, and puts first in line the run of the one
// that got a run of its own; the questions after it wait for that run.
func (r *Relay) settle(ctx context.Context, c *chat, sr backend.SteeredRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// No question is steered from now on (ask checks started under mu),
	// so every one steered is among those Settle settles.
	c.started = false
	joined, dropped, next := sr.Settle()
	take := func(ids []string, f func(q int64)) {
		for _, id := range ids {
			for i, s := range c.steered {
				if s.msgID == id {
					f(s.question)
					c.steered = append(c.steered[:i], c.steered[i+1:]...)
					break
				}
			}
		}
	}
	take(joined, func(q int64) { r.reply(ctx, c.id, nil, q) })
	take(dropped, func(q int64) {
		if err := r.opts.Store.Drop(ctx, q); err != nil {
			r.opts.Logger.Error("relay: cannot drop a question", "err", err)
		}
	})
	switch {
	case next != nil && len(c.steered) > 0:
		s := c.steered[0]
		c.steered = c.steered[1:]
		c.jobs = append([]job{{question: s.question, run: next}}, c.jobs...)
	case next != nil:
		// A run whose question is not known (not expected): released.
		next.Close()
	}
}

// steeredQuestion is the question of the steered message msgID, or 0.
// It notes the message sent.
func (c *chat) steeredQuestion(msgID string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.steered {
		if s.msgID == msgID {
			c.steered[i].sent = true
			return s.question
		}
	}
	return 0
}

// unsent counts the steered questions the agent has not read yet: an
// abort drops them.
func (c *chat) unsent() int {
	n := 0
	for _, s := range c.steered {
		if !s.sent {
			n++
		}
	}
	return n
}

// reply queues the messages that answer a question (0: none) and takes
// the question out of the inbox, in one step.
func (r *Relay) reply(ctx context.Context, chatID string, msgs []deliver.Message, question int64) {
	if err := r.queue.Answer(ctx, chatID, msgs, question); err != nil {
		r.opts.Logger.Error("relay: cannot queue an answer", "chat", chatID, "err", err)
	}
}

// say queues a message for a chat; a storage failure is logged (the
// message is then lost, the one case the relay cannot help).
func (r *Relay) say(ctx context.Context, chatID string, kind route.Kind, text string) {
	if err := r.queue.Enqueue(ctx, chatID, string(kind), text); err != nil {
		r.opts.Logger.Error("relay: cannot queue a message", "chat", chatID, "err", err)
	}
}

func permissionPrompt(p protocol.PermissionRequest) string {
	what := p.CompactParams
	if what == "" {
		what = p.Parameters
	}
	if r := []rune(what); len(r) > 500 {
		what = string(r[:500]) + "…"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "🔐 %s wants to run:\n%s", p.Name, what)
	if p.Reason != "" {
		fmt.Fprintf(&b, "\n(%s)", p.Reason)
	}
	b.WriteString("\nReply /allow, /always (this tool for the rest of the session) or /deny.")
	return b.String()
}

// watcher keeps the typing indicator on while a run works and says "still
// working" after a silence.
type watcher struct {
	clock model.Clock
	done  chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	last time.Time // when the chat last got a message
}

func (r *Relay) watch(ctx context.Context, chatID string) *watcher {
	w := &watcher{clock: r.opts.Clock, done: make(chan struct{}), last: r.opts.Clock.Now()}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		typing := r.opts.Clock.NewTimer(0)
		defer typing.Stop()
		var silence model.Timer
		var silenceC <-chan time.Time
		if r.opts.Silence > 0 {
			silence = r.opts.Clock.NewTimer(r.opts.Silence)
			defer silence.Stop()
			silenceC = silence.C()
		}
		start := r.opts.Clock.Now()
		for {
			select {
			case <-w.done:
				if err := r.typing(context.WithoutCancel(ctx), chatID, false); err != nil {
					r.opts.Logger.Debug("relay: typing off failed", "err", err)
				}
				return
			case <-ctx.Done():
				return
			case <-typing.C():
				if err := r.typing(ctx, chatID, true); err != nil {
					r.opts.Logger.Debug("relay: typing failed", "err", err)
				}
				typing.Reset(r.opts.TypingEvery)
			case <-silenceC:
				now := r.opts.Clock.Now()
				w.mu.Lock()
				quiet := now.Sub(w.last)
				if quiet >= r.opts.Silence {
					w.last = now
				}
				w.mu.Unlock()
				if quiet < r.opts.Silence {
					silence.Reset(r.opts.Silence - quiet)
					continue
				}
				mins := int(now.Sub(start).Minutes())
				r.say(ctx, chatID, KindNotice, fmt.Sprintf("⏳ Still working… (%d min so far)", mins))
				silence.Reset(r.opts.Silence)
			}
		}
	}()
	return w
}

// typing switches the typing indicator, within the send timeout: a
// platform that does not answer must not hold up the chat's run.
func (r *Relay) typing(ctx context.Context, chatID string, on bool) error {
	if d := r.opts.Pacing.SendTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return r.opts.Channel.Typing(ctx, chatID, on)
}

// activity records that the chat got a message now.
func (w *watcher) activity() {
	now := w.clock.Now()
	w.mu.Lock()
	w.last = now
	w.mu.Unlock()
}

func (w *watcher) stop() {
	close(w.done)
	w.wg.Wait()
}
