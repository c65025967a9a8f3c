package printmode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// steerer gives the session the host's messages that arrive while a run is
// going (stream-json input), at once: the session steers a message into
// the run at its next model request, after the tool results, as the Agent
// SDK's streaming input expects, or runs it next when the run has made its
// last request. A steered message's result is its run's, written once; a
// message that got a run of its own is reported by the next runOne.
type steerer struct {
	mu   sync.Mutex
	sent []sentInput // given to the session, not yet reported, in order
	// carry is the first item of the next run, read while looking for the
	// end of the one before.
	carry *agent.Item
}

// sentInput is a host message given to the session mid-run: its id and
// its job. A nil job means it was not given (the budget was spent): the
// next runOne reports it.
type sentInput struct {
	in  userInput
	id  string
	job session.Job
}

// feed submits the prompts that arrive until ctx is done. It returns when
// ctx is done or the input has ended.
func (st *steerer) feed(ctx context.Context, sess session.Session, prompts *queue[userInput], w *cclines.Writer, cfg Config, hst *host) {
	for {
		in, ok := prompts.pop(ctx)
		if !ok {
			return
		}
		sent := sentInput{in: in}
		if !hst.overBudget() {
			var err error
			sent.id, sent.job, err = sess.SubmitMessage(ctx, in.text, in.images...)
			if err != nil {
				fmt.Fprintf(cfg.Stderr, "sluice: %v\n", err)
				continue
			}
		}
		st.mu.Lock()
		st.sent = append(st.sent, sent)
		st.mu.Unlock()
		// After the session has it: the echo says it was taken.
		if cfg.ReplayUserMessages && in.line != nil {
			w.Line(replayLine(in.line, sess.ID()))
			w.Flush()
		}
	}
}

// nextOrNone takes the next message given mid-run that has a run of its
// own; those steered into an earlier run are dropped (that run reported
// them). A nil steerer has none.
func (st *steerer) nextOrNone() (sentInput, bool) {
	if st == nil {
		return sentInput{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.sent) > 0 {
		s := st.sent[0]
		st.sent = st.sent[1:]
		if s.job == nil || !steered(s.job) {
			return s, true
		}
	}
	return sentInput{}, false
}

// startsRun reports whether it, read after run's job is done, is the first
// event of a later message's own run. Before the job is done every event
// is the run's (a later run publishes only after it), and a message
// steered into the run is done, as steered, before the run's job.
func (st *steerer) startsRun(run session.Job, it agent.Item) bool {
	e, ok := it.Event.(protocol.UserMessageAdded)
	if !ok || st == nil {
		return false
	}
	select {
	case <-run.Done():
	default:
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range st.sent {
		if s.job != nil && s.id == e.Message.ID {
			return !steered(s.job)
		}
	}
	return false
}

// steered reports whether job's message joined an earlier run.
func steered(job session.Job) bool {
	select {
	case <-job.Done():
	default:
		return false
	}
	res, _ := job.Wait(context.Background())
	return res.SteeredInto != ""
}

// takeCarry returns the item saved for the next run.
func (st *steerer) takeCarry() *agent.Item {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	it := st.carry
	st.carry = nil
	return it
}

func (st *steerer) setCarry(it agent.Item) {
	st.mu.Lock()
	st.carry = &it
	st.mu.Unlock()
}

// popIdle waits for the host's next message. With stream-json input and
// output, it reads meanwhile what the session publishes between runs (a
// background command's end) so that its lines go out when it happens; the
// first event of anything else is kept for the next run.
func popIdle(ctx context.Context, prompts *queue[userInput], sub *agent.Subscription, st *steerer, tl *cclines.TaskLines, w *cclines.Writer, cfg Config) (userInput, bool) {
	if sub == nil || st == nil || cfg.OutputFormat != FormatStreamJSON {
		return prompts.pop(ctx)
	}
	rctx, stop := context.WithCancel(ctx)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			it, err := sub.NextItem(rctx)
			if err != nil {
				return
			}
			if _, ok := it.Event.(protocol.TaskUpdated); !ok {
				st.setCarry(it)
				return
			}
			tl.Take(w, it.Event, time.Now)
			w.Flush()
		}
	}()
	in, ok := prompts.pop(ctx)
	stop()
	<-read
	return in, ok
}

// stillQueued lists the uuids of the host's messages that an interrupt
// leaves to run (its receipt, as Claude Code's interrupt_receipt_v1): those
// the session holds queued, then those read and not yet given to it. Only
// messages the host stamped with a uuid are listed.
func (h *host) stillQueued(sess session.Session) []string {
	out := []string{}
	if h.st == nil {
		return out
	}
	h.st.mu.Lock()
	byID := map[string]json.RawMessage{}
	for _, s := range h.st.sent {
		if s.job != nil {
			byID[s.id] = s.in.line
		}
	}
	h.st.mu.Unlock()
	add := func(line json.RawMessage) {
		var m struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(line, &m) == nil && m.UUID != "" {
			out = append(out, m.UUID)
		}
	}
	for _, q := range sess.Messages().Queued {
		if line, ok := byID[q.MessageID]; ok && q.Kind == protocol.QueueMessage {
			add(line)
		}
	}
	for _, in := range h.prompts.snapshot() {
		add(in.line)
	}
	return out
}
