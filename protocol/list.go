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
//
// The messages of a child session (a subagent) hang under the tool block
// whose call runs it: an event whose Header.ParentToolID is set applies to
// the nested list of the tool block with that toolId, found depth first
// (a block before the messages nested in it, in list order), the same
// rules applying there as at the top.
type List struct {
	seq int64
	top level
	// found caches the nested list a parentToolId resolves to. An entry is
	// dropped whenever what resolving it finds could change: a block or
	// message removed or replaced, a tool block added or given an id.
	found map[string]*level
	// running is what the last runStateChanged said.
	running bool
	// perms are the permission requests not yet resolved, in seq order.
	perms []PermissionRequest
	// queued is what the last queueChanged said.
	queued []QueuedWork
	// tasks are the background tasks running, oldest first.
	tasks []Task
	// compaction is the compaction in progress, or nil.
	compaction *Compaction
	// grew is what the last text or reasoning chunk applied did to its
	// block (Publish hands it on).
	grew grown
}

// level is one list of messages: the session's own, or a child session's
// under a tool block.
type level struct {
	msgs  []Message // their Block.Messages are nil: those are in slots
	slots [][]slot  // slots[i][j] belongs to msgs[i].Blocks[j]
}

type slot struct {
	buf  []byte // backs the growing field of the block
	kids *level // the messages of the child session a tool block runs, or nil
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
	l.top = level{}
	for _, m := range snap.Messages {
		l.top.push(m)
	}
	l.found = nil
	l.running = snap.Running
	l.perms = slices.Clone(snap.PendingPermissions)
	l.queued = slices.Clone(snap.Queued)
	l.tasks = slices.Clone(snap.Tasks)
	l.compaction = snap.Compaction.clone()
}

// Seq is the seq of the last event the list reflects.
func (l *List) Seq() int64 { return l.seq }

// Len is the number of messages.
func (l *List) Len() int { return len(l.top.msgs) }

// At returns a copy of message i, with the nested messages of its tool
// blocks.
func (l *List) At(i int) Message { return l.top.message(i) }

// Index returns the index of the last message with the given id, or -1.
func (l *List) Index(id string) int { return l.top.index(id) }

// BlockContent returns the content of block b of the message with the
// given id, at the top or nested under a tool block ("" when there is no
// such block), without copying the message as At does.
func (l *List) BlockContent(id string, b int) string {
	m := l.top.lookup(id)
	if m == nil || b < 0 || b >= len(m.Blocks) {
		return ""
	}
	return m.Blocks[b].Content
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

// Compaction returns a copy of the compaction in progress, or nil.
func (l *List) Compaction() *Compaction { return l.compaction.clone() }

// Snapshot returns a deep copy of the list's state and its seq. Its slices
// are never nil, so that its JSON form always has every member.
func (l *List) Snapshot() Snapshot {
	return Snapshot{
		Seq: l.seq, Messages: l.top.all(),
		Running: l.running, PendingPermissions: l.PendingPermissions(),
		Queued: l.Queued(), Tasks: l.Tasks(), Compaction: l.Compaction(),
	}
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

// Publish is Apply for the list an event is published from: the event it
// returns carries, invisibly (not in its JSON), the content it produced,
// so that other lists of the same process applying it share that text
// rather than copying it (see grown).
func (l *List) Publish(ev Event) (Event, error) {
	l.grew = grown{}
	if err := l.Apply(ev); err != nil {
		return nil, err
	}
	if l.grew.after == "" {
		return ev, nil
	}
	switch e := ev.(type) {
	case AssistantContentUpdated:
		e.grown = l.grew
		return e, nil
	case AssistantReasoningUpdated:
		e.grown = l.grew
		return e, nil
	}
	return ev, nil
}

// grow appends chunk to a text or reasoning block's content, or adopts the
// publisher's content when g says it is this content and the chunk.
func (l *List) grow(s *string, buf *[]byte, chunk string, g grown) {
	if chunk == "" {
		return
	}
	before := *s
	if g.after != "" && sameString(before, g.before) && len(g.after) == len(before)+len(chunk) {
		*s, *buf = g.after, nil
	} else {
		appendString(s, buf, chunk)
	}
	l.grew = grown{before: before, after: *s}
}

// sameString reports whether a and b are the same string in memory, not
// merely equal: O(1).
func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

func (l *List) apply(ev Event) error {
	// The session-wide state: a child's run state, queue and notices
	// change nothing, its permission requests and background tasks are
	// the session's.
	switch e := ev.(type) {
	case RunStateChanged:
		if e.ParentToolID == "" {
			l.running = e.State == RunRunning
		}
		return nil
	case QueueChanged:
		if e.ParentToolID == "" {
			l.queued = slices.Clone(e.Queued)
		}
		return nil
	case CompactionUpdated:
		if e.ParentToolID != "" {
			return nil
		}
		switch e.Stage {
		case StageStart:
			l.compaction = &Compaction{StartedAt: e.StartedAt}
		case StageEnd:
			l.compaction = nil
		default:
			if l.compaction == nil {
				l.compaction = &Compaction{}
			}
			l.compaction.Chars += e.Chars
		}
		return nil
	case TaskUpdated:
		// A running task the list holds is replaced where it is (its
		// output moved on); an end of a task never held changes nothing.
		i := slices.IndexFunc(l.tasks, func(t Task) bool { return t.TaskID == e.TaskID })
		switch {
		case e.State != TaskRunning && i >= 0:
			l.tasks = slices.Delete(l.tasks, i, i+1)
		case e.State == TaskRunning && i >= 0:
			l.tasks[i] = e.Task
		case e.State == TaskRunning:
			l.tasks = append(l.tasks, e.Task)
		}
		return nil
	case PermissionRequest:
		l.perms = append(l.perms, e)
		return nil
	case PermissionResolved:
		// A resolution of a request the list never held (a snapshot from a
		// server that did not carry pending requests) changes nothing.
		l.perms = slices.DeleteFunc(l.perms, func(p PermissionRequest) bool { return p.RequestID == e.RequestID })
		return nil
	case StreamNotice:
		// Not state: a notice concerns the moment it arrives.
		return nil
	}
	lv := &l.top
	if p := ev.Head().ParentToolID; p != "" {
		if lv = l.child(p); lv == nil {
			return fmt.Errorf("no tool block %q for a child session", p)
		}
	}
	switch e := ev.(type) {
	case UserMessageAdded:
		l.pushTo(lv, e.Message)
	case AssistantMessageAdded:
		l.pushTo(lv, e.Message)
	case CompactBlockAdded:
		if e.Message.ID == "" {
			// An older server sent the summary without its message:
			// appending an empty one would show nothing; a snapshot has it.
			return errors.New("no message")
		}
		l.pushTo(lv, e.Message)
	case AssistantContentUpdated:
		i, b, err := lv.block(e.MessageID, e.BlockIndex, BlockText)
		if err != nil {
			return err
		}
		blk := &lv.msgs[i].Blocks[b]
		l.grow(&blk.Content, &lv.slots[i][b].buf, e.Chunk, e.grown)
		blk.Stage = e.Stage
	case AssistantReasoningUpdated:
		i, b, err := lv.block(e.MessageID, e.BlockIndex, BlockReasoning)
		if err != nil {
			return err
		}
		blk := &lv.msgs[i].Blocks[b]
		l.grow(&blk.Content, &lv.slots[i][b].buf, e.Chunk, e.grown)
		blk.Stage = e.Stage
		if e.StartedAt != 0 {
			blk.StartedAt = e.StartedAt
		}
		if e.EndedAt != 0 {
			blk.EndedAt = e.EndedAt
		}
	case ToolBlockUpdated:
		i, b, err := lv.block(e.MessageID, e.BlockIndex, BlockTool)
		if err != nil {
			return err
		}
		blk := &lv.msgs[i].Blocks[b]
		if e.ToolID != "" && e.ToolID != blk.ToolID {
			// A block joins those a parentToolId may name.
			delete(l.found, blk.ToolID)
			delete(l.found, e.ToolID)
		}
		l.applyTool(blk, &lv.slots[i][b].buf, e)
	case ErrorBlockAdded:
		i := lv.index(e.MessageID)
		if i < 0 {
			return fmt.Errorf("no message %q", e.MessageID)
		}
		m := &lv.msgs[i]
		switch {
		case e.BlockIndex == len(m.Blocks):
			m.Blocks = append(m.Blocks, Block{Type: BlockError, Content: e.Error})
			lv.slots[i] = append(lv.slots[i], slot{})
		case e.BlockIndex < len(m.Blocks) && e.BlockIndex >= 0:
			m.Blocks[e.BlockIndex] = Block{Type: BlockError, Content: e.Error}
			lv.slots[i][e.BlockIndex] = slot{}
			l.found = nil
		default:
			return fmt.Errorf("block %d beyond the %d of message %q", e.BlockIndex, len(m.Blocks), e.MessageID)
		}
	case TurnEnded:
		i := lv.index(e.MessageID)
		if i < 0 {
			return fmt.Errorf("no message %q", e.MessageID)
		}
		lv.msgs[i].StopReason = e.StopReason
		if e.Usage != nil {
			u := *e.Usage
			lv.msgs[i].Usage = &u
		}
	case AssistantMessageDiscarded:
		if i := lv.index(e.MessageID); i >= 0 {
			lv.msgs = slices.Delete(lv.msgs, i, i+1)
			lv.slots = slices.Delete(lv.slots, i, i+1)
			l.found = nil
		}
	case MessagesRewound:
		i := lv.index(e.AnchorMessageID)
		if i < 0 {
			return fmt.Errorf("no anchor message %q", e.AnchorMessageID)
		}
		clear(lv.msgs[i:])
		clear(lv.slots[i:])
		lv.msgs = lv.msgs[:i]
		lv.slots = lv.slots[:i]
		l.found = nil
	case MessagesCleared:
		lv.msgs = nil
		lv.slots = nil
		l.found = nil
	default:
		return fmt.Errorf("unknown event %T", ev)
	}
	return nil
}

// child returns the nested list of the tool block a parentToolId names,
// or nil when no block has that id.
func (l *List) child(toolID string) *level {
	if lv := l.found[toolID]; lv != nil {
		return lv
	}
	lv := l.top.find(toolID)
	if lv != nil {
		if l.found == nil {
			l.found = map[string]*level{}
		}
		l.found[toolID] = lv
	}
	return lv
}

// pushTo appends m to lv. A message that brings tool blocks may hold an id
// that some cached parentToolId now resolves to differently.
func (l *List) pushTo(lv *level, m Message) {
	if hasTool(m) {
		l.found = nil
	}
	lv.push(m)
}

func hasTool(m Message) bool {
	for _, b := range m.Blocks {
		if b.Type == BlockTool {
			return true
		}
	}
	return false
}

// push appends a copy of m, moving the nested messages of its tool blocks
// into the slots.
func (lv *level) push(m Message) {
	c := m.Clone()
	slots := make([]slot, len(c.Blocks))
	for j := range c.Blocks {
		b := &c.Blocks[j]
		if b.Type == BlockTool && len(b.Messages) > 0 {
			kids := &level{}
			for _, km := range b.Messages {
				kids.push(km)
			}
			slots[j].kids = kids
		}
		b.Messages = nil
	}
	lv.msgs = append(lv.msgs, c)
	lv.slots = append(lv.slots, slots)
}

// message returns a copy of message i with the nested messages of its
// tool blocks.
func (lv *level) message(i int) Message {
	c := lv.msgs[i].Clone()
	for j, s := range lv.slots[i] {
		if s.kids != nil && len(s.kids.msgs) > 0 {
			c.Blocks[j].Messages = s.kids.all()
		}
	}
	return c
}

func (lv *level) all() []Message {
	out := make([]Message, len(lv.msgs))
	for i := range lv.msgs {
		out[i] = lv.message(i)
	}
	return out
}

func (lv *level) index(id string) int {
	for i := len(lv.msgs) - 1; i >= 0; i-- {
		if lv.msgs[i].ID == id {
			return i
		}
	}
	return -1
}

// lookup returns the last message with the given id in lv, else the
// first found in the lists nested under its tool blocks, depth first.
func (lv *level) lookup(id string) *Message {
	if i := lv.index(id); i >= 0 {
		return &lv.msgs[i]
	}
	for i := range lv.slots {
		for _, s := range lv.slots[i] {
			if s.kids != nil {
				if m := s.kids.lookup(id); m != nil {
					return m
				}
			}
		}
	}
	return nil
}

// find returns the nested list of the first tool block with the given id,
// depth first, creating it empty, or nil when there is none.
func (lv *level) find(toolID string) *level {
	for i, m := range lv.msgs {
		for j, b := range m.Blocks {
			s := &lv.slots[i][j]
			if b.Type == BlockTool && b.ToolID == toolID {
				if s.kids == nil {
					s.kids = &level{}
				}
				return s.kids
			}
			if s.kids != nil {
				if found := s.kids.find(toolID); found != nil {
					return found
				}
			}
		}
	}
	return nil
}

// block finds block b of message id, creating it with type t when b is the
// next index.
func (lv *level) block(id string, b int, t BlockType) (int, int, error) {
	i := lv.index(id)
	if i < 0 {
		return 0, 0, fmt.Errorf("no message %q", id)
	}
	m := &lv.msgs[i]
	switch {
	case b == len(m.Blocks):
		m.Blocks = append(m.Blocks, Block{Type: t})
		lv.slots[i] = append(lv.slots[i], slot{})
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
	if e.OldText != "" {
		blk.OldText = e.OldText
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
