package session

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// Local wraps a session running in this process. Its subscriptions queue
// without a bound on bytes (merging deltas, so bounded by the content).
func Local(s *agent.Session) Session { return localSession{Session: s} }

// LocalBounded wraps a session running in this process whose
// subscriptions hold the session's model stream back past maxPendingBytes
// queued bytes (agent.SubscribeOptions.MaxPendingBytes; 0: never), for a
// face that is the session's only audience and must not buffer without
// limit when its reader stops.
func LocalBounded(s *agent.Session, maxPendingBytes int) Session {
	return localSession{Session: s, maxPending: maxPendingBytes}
}

// localSession is a session of this process.
type localSession struct {
	*agent.Session
	maxPending int
}

func (l localSession) Owner() string { return "" }

func (l localSession) SnapshotAndSubscribe() (protocol.Snapshot, Subscription) {
	snap, sub := l.Session.SnapshotAndSubscribe(agent.SubscribeOptions{MaxPendingBytes: l.maxPending})
	return snap, sub
}

func (l localSession) SubscribeFrom(seq int64) (Subscription, error) {
	sub, err := l.Session.SubscribeFrom(seq, agent.SubscribeOptions{MaxPendingBytes: l.maxPending})
	if err != nil {
		// A nil *agent.Subscription in the interface would not be nil.
		return nil, err
	}
	return sub, nil
}

func (l localSession) Submit(ctx context.Context, text string, force bool) (string, error) {
	if force {
		l.Session.Abort("superseded by a new message")
	}
	h, err := l.Session.Submit(ctx, text)
	if err != nil {
		return "", err
	}
	return h.ID(), nil
}

func (l localSession) SubmitMessage(ctx context.Context, text string, images ...agent.Image) (string, Job, error) {
	var (
		h   *agent.Handle
		err error
	)
	if len(images) > 0 {
		h, err = l.Session.SubmitImages(ctx, text, images)
	} else {
		h, err = l.Session.Submit(ctx, text)
	}
	if err != nil {
		return "", nil, err
	}
	return h.ID(), localJob{s: l.Session, h: h, message: true}, nil
}

func (l localSession) Abort(_ context.Context, reason string) error {
	l.Session.Abort(reason)
	return nil
}

func (l localSession) Interrupt(_ context.Context, reason string) error {
	l.Session.Interrupt(reason)
	return nil
}

func (l localSession) Subagents() []Subagent { return subagents(l.Session.Subagents()) }

// subagents describes the agent's subagent kinds.
func subagents(ds []agent.Subagent) []Subagent {
	out := make([]Subagent, 0, len(ds))
	for _, d := range ds {
		out = append(out, Subagent{Name: d.Name, Description: d.Description, Model: d.Model})
	}
	return out
}

func (l localSession) Rewind(ctx context.Context, messageID string) (int64, error) {
	err := l.Session.Rewind(ctx, messageID)
	return l.Session.Seq(), err
}

func (l localSession) Clear(ctx context.Context) (int64, error) {
	err := l.Session.Clear(ctx)
	return l.Session.Seq(), err
}

func (l localSession) SubmitCompact(ctx context.Context) (Job, error) {
	h, err := l.Session.SubmitCompact(ctx)
	if err != nil {
		return nil, err
	}
	return localJob{s: l.Session, h: h}, nil
}

func (l localSession) SubmitBang(ctx context.Context, command string) (Job, error) {
	h, err := l.Session.SubmitBang(ctx, command)
	if err != nil {
		return nil, err
	}
	return localJob{s: l.Session, h: h}, nil
}

func (l localSession) SetModel(_ context.Context, name string) error {
	l.Session.SetModel(name)
	return nil
}

func (l localSession) SetThinkingBudget(_ context.Context, tokens int) error {
	l.Session.SetThinkingBudget(tokens)
	return nil
}

func (l localSession) SetPermissionMode(_ context.Context, mode protocol.PermissionMode) error {
	return l.Session.SetPermissionMode(mode)
}

func (l localSession) AnswerPermission(_ context.Context, requestID string, decision protocol.Decision) error {
	return l.Session.AnswerPermission(requestID, decision)
}

func (l localSession) Ask(ctx context.Context, question string) (string, error) {
	return l.Session.Ask(ctx, question, nil)
}

type localJob struct {
	s       *agent.Session
	h       *agent.Handle
	message bool // a user message's: its id is set once it runs
}

func (j localJob) Done() <-chan struct{} { return j.h.Done() }

func (j localJob) Wait(ctx context.Context) (JobResult, error) {
	// A failed run's result still says how far it got (agent.Handle.Wait).
	res, err := j.h.Wait(ctx)
	return JobResult{
		MessageID:   res.MessageID,
		Seq:         j.s.Seq(),
		SteeredInto: res.SteeredInto,
		Text:        res.Text,
		StopReason:  res.StopReason,
		CostUSD:     res.CostUSD,

		Turns:         res.Turns,
		Usage:         res.Usage,
		APIDuration:   res.APIDuration,
		Denials:       res.Denials,
		FallbackModel: res.FallbackModel,
		Continued:     res.Continued,
		Subagents:     subagentRuns(res.Subagents),
		// An abort drops queued work without a message id (agent.Abort).
		Dropped: j.message && res.MessageID == "" && errors.Is(err, agent.ErrAborted),
	}, err
}

// subagentRuns describes the child sessions a run ran.
func subagentRuns(rs []agent.SubagentRun) []SubagentRun {
	var out []SubagentRun
	for _, r := range rs {
		out = append(out, SubagentRun{Type: r.Type, Model: r.Model, Usage: r.Usage, CostUSD: r.CostUSD, Failed: r.Err != nil})
	}
	return out
}
