package protocol

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// Errors returned by List.Apply.
var (
	// ErrStale means the event's seq is not newer than the list's: it is
	// already reflected and was dropped. Consumers normally ignore it.
	ErrStale = errors.New("protocol: stale event dropped")
	// ErrGap means events were lost between the list's seq and the event's:
	// pull a snapshot.
	ErrGap = errors.New("protocol: events missing, resync with a snapshot")
	// ErrInconsistent means the event does not fit the list (an unknown
	// message or block): pull a snapshot.
	ErrInconsistent = errors.New("protocol: event does not fit the list, resync with a snapshot")
)

// List is a consumer's copy of a session's view state: its message list,
// whether the agent is running and the permission requests that wait for an
// answer. It is the one reducer that every face uses to apply events, so
// no face keeps any of this state of its own. The zero value is an empty,
// idle list at seq 0. A List is not safe for concurrent use.
//
// Appending a delta costs O(len(chunk)) amortised, whatever the length of
// the block or of the session: blocks grow in private buffers that the
// block's strings are views of (see appendString).
type List struct {
	seq  int64
	msgs []Message
	bufs [][][]byte // bufs[i][j] backs the growing field of msgs[i].Blocks[j]
	// running is what the last runStateChanged said.
	running bool
	// perms are the permission requests not yet resolved, in seq order.
	perms []PermissionRequest
	// queued is what the last queueChanged said.
	queued []QueuedWork
	// tasks are the background tasks running, oldest first.
	tasks []Task
}

// NewList returns a list holding a copy of snap.
func NewList(snap Snapshot) *List {
	l := &List{}
	l.Reset(snap)
	return l
}

// Reset replaces the list with a copy of snap.
func (l *List) Reset(snap Snapshot) {
	l.seq = snap.Seq
	l.msgs = make([]Message, len(snap.Messages))
	l.bufs = make([][][]byte, len(snap.Messages))
	for i, m := range snap.Messages {
		l.msgs[i] = m.Clone()
		l.bufs[i] = make([][]byte, len(m.Blocks))
	}
	l.running = snap.Running
	l.perms = slices.Clone(snap.PendingPermissions)
	l.queued = slices.Clone(snap.Queued)
	l.tasks = slices.Clone(snap.Tasks)
}

// Seq is the seq of the last event the list reflects.
func (l *List) Seq() int64 { return l.seq }

// Len is the number of messages.
func (l *List) Len() int { return len(l.msgs) }

// At returns a copy of message i.
func (l *List) At(i int) Message { return l.msgs[i].Clone() }

// Index returns the index of the last message with the given id, or -1.
func (l *List) Index(id string) int {
	for i := len(l.msgs) - 1; i >= 0; i-- {
		if l.msgs[i].ID == id {
			return i
		}
	}
	return -1
}

// Running reports whether the last runStateChanged said running.
func (l *List) Running() bool { return l.running }

// PendingPermissions returns a copy of the permission requests that no
// permissionResolved has closed yet, oldest first.
func (l *List) PendingPermissions() []PermissionRequest {
	return append([]PermissionRequest{}, l.perms...)
}

// Queued returns a copy of the work waiting behind the run in progress,
// oldest first.
func (l *List) Queued() []QueuedWork { return slices.Clone(l.queued) }

// Tasks returns a copy of the background tasks running, oldest first.
func (l *List) Tasks() []Task { return slices.Clone(l.tasks) }

// Snapshot returns a deep copy of the list's state and its seq. Its slices
// are never nil, so that its JSON form always has every member.
func (l *List) Snapshot() Snapshot {
	s := Snapshot{
		Seq: l.seq, Messages: make([]Message, len(l.msgs)),
		Running: l.running, PendingPermissions: l.PendingPermissions(),
		Queued: l.Queued(), Tasks: l.Tasks(),
	}
	for i, m := range l.msgs {
		s.Messages[i] = m.Clone()
	}
	return s
}

// Apply applies one event. It returns nil when the event was applied,
// ErrStale when it was already reflected, and an error wrapping ErrGap or
// ErrInconsistent when the list cannot take it; in those cases the list is
// unchanged and the consumer should replace it with a snapshot.
func (l *List) Apply(ev Event) error {
	h := ev.Head()
	if h.Seq <= l.seq {
		return ErrStale
	}
	if from := h.From(); from != l.seq+1 {
		return fmt.Errorf("%w: holding seq %d, got %s covering %d..%d", ErrGap, l.seq, ev.Method(), from, h.Seq)
	}
	if err := l.apply(ev); err != nil {
		return fmt.Errorf("%w: %s (seq %d): %v", ErrInconsistent, ev.Method(), h.Seq, err)
	}
	l.seq = h.Seq
	return nil
}

func (l *List) apply(ev Event) error {
	switch e := ev.(type) {
	case UserMessageAdded:
		l.push(e.Message)
	case AssistantMessageAdded:
		l.push(e.Message)
	case CompactBlockAdded:
		if e.Message.ID == "" {
			// An older server sent the summary without its message:
			// appending an empty one would show nothing; a snapshot has it.
			return errors.New("no message")
		}
		l.push(e.Message)
	case AssistantContentUpdated:
		i, b, err := l.block(e.MessageID, e.BlockIndex, BlockText)
		if err != nil {
			return err
		}
		blk := &l.msgs[i].Blocks[b]
		appendString(&blk.Content, &l.bufs[i][b], e.Chunk)
		blk.Stage = e.Stage
	case AssistantReasoningUpdated:
		i, b, err := l.block(e.MessageID, e.BlockIndex, BlockReasoning)
		if err != nil {
			return err
		}
		blk := &l.msgs[i].Blocks[b]
		appendString(&blk.Content, &l.bufs[i][b], e.Chunk)
		blk.Stage = e.Stage
		if e.StartedAt != 0 {
			blk.StartedAt = e.StartedAt
		}
		if e.EndedAt != 0 {
			blk.EndedAt = e.EndedAt
		}
	case ToolBlockUpdated:
		i, b, err := l.block(e.MessageID, e.BlockIndex, BlockTool)
		if err != nil {
			return err
		}
		l.applyTool(&l.msgs[i].Blocks[b], &l.bufs[i][b], e)
	case ErrorBlockAdded:
		i := l.Index(e.MessageID)
		if i < 0 {
			return fmt.Errorf("no message %q", e.MessageID)
		}
		m := &l.msgs[i]
		switch {
		case e.BlockIndex == len(m.Blocks):
			m.Blocks = append(m.Blocks, Block{Type: BlockError, Content: e.Error})
			l.bufs[i] = append(l.bufs[i], nil)
		case e.BlockIndex < len(m.Blocks) && e.BlockIndex >= 0:
			m.Blocks[e.BlockIndex] = Block{Type: BlockError, Content: e.Error}
			l.bufs[i][e.BlockIndex] = nil
		default:
			return fmt.Errorf("block %d beyond the %d of message %q", e.BlockIndex, len(m.Blocks), e.MessageID)
		}
	case TurnEnded:
		i := l.Index(e.MessageID)
		if i < 0 {
			return fmt.Errorf("no message %q", e.MessageID)
		}
		l.msgs[i].StopReason = e.StopReason
		if e.Usage != nil {
			u := *e.Usage
			l.msgs[i].Usage = &u
		}
	case AssistantMessageDiscarded:
		if i := l.Index(e.MessageID); i >= 0 {
			l.msgs = append(l.msgs[:i], l.msgs[i+1:]...)
			l.bufs = append(l.bufs[:i], l.bufs[i+1:]...)
		}
	case MessagesRewound:
		i := l.Index(e.AnchorMessageID)
		if i < 0 {
			return fmt.Errorf("no anchor message %q", e.AnchorMessageID)
		}
		clear(l.msgs[i:])
		l.msgs = l.msgs[:i]
		l.bufs = l.bufs[:i]
	case MessagesCleared:
		l.msgs = nil
		l.bufs = nil
	case RunStateChanged:
		l.running = e.State == RunRunning
	case PermissionRequest:
		l.perms = append(l.perms, e)
	case PermissionResolved:
		// A resolution of a request the list never held (a snapshot from a
		// server that did not carry pending requests) changes nothing.
		l.perms = slices.DeleteFunc(l.perms, func(p PermissionRequest) bool { return p.RequestID == e.RequestID })
	case QueueChanged:
		l.queued = slices.Clone(e.Queued)
	case TaskUpdated:
		// A task the list holds is replaced, so a repeated start is
		// harmless; an end of a task never held changes nothing.
		l.tasks = slices.DeleteFunc(l.tasks, func(t Task) bool { return t.TaskID == e.TaskID })
		if e.State == TaskRunning {
			l.tasks = append(l.tasks, e.Task)
		}
	case StreamNotice:
		// Not state: a notice concerns the moment it arrives.
	default:
		return fmt.Errorf("unknown event %T", ev)
	}
	return nil
}

func (l *List) push(m Message) {
	l.msgs = append(l.msgs, m.Clone())
	l.bufs = append(l.bufs, make([][]byte, len(m.Blocks)))
}

// block finds block b of message id, creating it with type t when b is the
// next index.
func (l *List) block(id string, b int, t BlockType) (int, int, error) {
	i := l.Index(id)
	if i < 0 {
		return 0, 0, fmt.Errorf("no message %q", id)
	}
	m := &l.msgs[i]
	switch {
	case b == len(m.Blocks):
		m.Blocks = append(m.Blocks, Block{Type: t})
		l.bufs[i] = append(l.bufs[i], nil)
	case b < 0 || b > len(m.Blocks):
		return 0, 0, fmt.Errorf("block %d beyond the %d of message %q", b, len(m.Blocks), id)
	case m.Blocks[b].Type != t:
		return 0, 0, fmt.Errorf("block %d of message %q is %s, not %s", b, id, m.Blocks[b].Type, t)
	}
	return i, b, nil
}

func (l *List) applyTool(blk *Block, buf *[]byte, e ToolBlockUpdated) {
	if e.ToolID != "" {
		blk.ToolID = e.ToolID
	}
	if e.Name != "" {
		blk.Name = e.Name
	}
	// Stages only go forward: a late parameter chunk must not corrupt the
	// authoritative parameters a running or ended block already holds.
	if toolStageOrder(e.Stage) < toolStageOrder(blk.Stage) {
		return
	}
	blk.Stage = e.Stage
	if e.Stage == StageStreaming {
		appendString(&blk.Parameters, buf, e.ParametersChunk)
		return
	}
	if e.Parameters != "" {
		blk.Parameters = e.Parameters
	}
	if e.CompactParams != "" {
		blk.CompactParams = e.CompactParams
	}
	if e.ResultChunk != "" {
		appendString(&blk.Result, buf, e.ResultChunk)
	}
	if e.ShortResult != "" {
		blk.ShortResult = e.ShortResult
	}
	if e.Result != nil {
		blk.Result = *e.Result
	}
	if e.Success != nil {
		v := *e.Success
		blk.Success = &v
	}
	if e.Error != "" {
		blk.Error = e.Error
	}
}

// appendString appends chunk to *s in amortised O(len(chunk)).
//
// Go strings are immutable, so s += chunk copies the whole string and a
// streamed block would cost O(n²). Instead *s is a view of *buf, as in
// strings.Builder: bytes already covered by a string are never written
// again (append writes past them or moves to a new array), so every string
// handed out stays valid and unchanged. When *buf does not back *s exactly
// (a fresh block, a value replaced by an authoritative one, a list reset
// from a snapshot), a new buffer is started.
func appendString(s *string, buf *[]byte, chunk string) {
	if chunk == "" {
		return
	}
	b := *buf
	if len(b) != len(*s) || len(b) == 0 || unsafe.SliceData(b) != unsafe.StringData(*s) {
		b = make([]byte, len(*s), 2*(len(*s)+len(chunk))+32)
		copy(b, *s)
	}
	b = append(b, chunk...)
	*buf = b
	*s = unsafe.String(unsafe.SliceData(b), len(b))
}
