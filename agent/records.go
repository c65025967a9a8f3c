package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// Record types of a session file. A session is the replay of its records:
// display messages are written when they are complete (a user message when
// added, an assistant message when its round ends), the model's context as
// it grows, and compactions, rewinds and clears as they happen.
const (
	recMeta    = "meta"
	recTitle   = "title"
	recMessage = "message" // a display message, appended (or replacing the last with its id)
	recContext = "context" // messages appended to the model's context
	recCompact = "compact" // a summary appended; the context folded
	recRewind  = "rewind"
	recClear   = "clear"
	// recEvent is a streamed event of the message being answered, written
	// as it streams (in small batches) so that a crash keeps what was
	// shown. A later message record with the same id supersedes them.
	recEvent = "event"
	// recCommit ends a message's round when the records before it hold
	// every change of the message (its streamed events): the message as
	// they rebuild it is complete, as a message record would say, without
	// its text written a second time.
	recCommit = "commit"
)

type record struct {
	Type     string            `json:"type"`
	Time     int64             `json:"time"`
	ID       string            `json:"id,omitempty"` // the message a commit record ends
	Meta     *metaRecord       `json:"meta,omitempty"`
	Title    string            `json:"title,omitempty"`
	Message  *protocol.Message `json:"message,omitempty"`
	Mark     *ctxMark          `json:"mark,omitempty"`
	Context  []model.Message   `json:"context,omitempty"`
	KeepFrom int               `json:"keepFrom,omitempty"`
	Anchor   string            `json:"anchor,omitempty"`
	Method   string            `json:"method,omitempty"`
	Event    json.RawMessage   `json:"event,omitempty"`
	// TextsOf and Texts: the texts of Context that Texts lists are left
	// empty in the record, being the content of blocks of display message
	// TextsOf as the records before rebuild it (see textRef).
	TextsOf string    `json:"textsOf,omitempty"`
	Texts   []textRef `json:"texts,omitempty"`

	// refOf and refs are the texts of Context that display message refOf
	// holds: the journal writes the record with TextsOf and Texts when the
	// log can rebuild that message.
	refOf string
	refs  []textRef
}

// textRef locates a text of a context record (message Context, content
// Content) in a display message: the content of block Block, or its
// result for a tool result.
type textRef struct {
	Context int `json:"c"`
	Content int `json:"i"`
	Block   int `json:"b"`
}

// contextRecord is the record of msgs appended to the context, to have
// their texts that display message id holds located there (locateTexts,
// when the message is recorded with it), so that a long answer or tool
// output is not written again beside its streamed events.
func (s *Session) contextRecord(id string, msgs []model.Message) record {
	return record{Type: recContext, Time: s.now(), Context: msgs, refOf: id}
}

// locateTexts sets rec.refs to where m's blocks hold exactly the texts of
// rec.Context (none: rec.refOf is cleared). m is the state of the message
// that the log holds just before rec.
func locateTexts(rec *record, m protocol.Message) {
	rec.refs = nil
	for k, cm := range rec.Context {
		for j, c := range cm.Content {
			if c.Text == "" {
				continue
			}
			for b, blk := range m.Blocks {
				var same bool
				switch c.Type {
				case model.ContentText:
					same = blk.Type == protocol.BlockText && blk.Content == c.Text
				case model.ContentReasoning:
					same = blk.Type == protocol.BlockReasoning && blk.Content == c.Text
				case model.ContentToolResult:
					same = blk.Type == protocol.BlockTool && blk.ToolID == c.ID && blk.Result == c.Text
				}
				if same {
					rec.refs = append(rec.refs, textRef{Context: k, Content: j, Block: b})
					break
				}
			}
		}
	}
	if len(rec.refs) == 0 {
		rec.refOf = ""
	}
}

// withRefs is rec as written when the log can rebuild message rec.refOf:
// the located texts left out, said where they are.
func (rec record) withRefs() record {
	out := rec
	out.Context = slices.Clone(rec.Context)
	cloned := map[int]bool{}
	for _, r := range rec.refs {
		if !cloned[r.Context] {
			out.Context[r.Context].Content = slices.Clone(out.Context[r.Context].Content)
			cloned[r.Context] = true
		}
		out.Context[r.Context].Content[r.Content].Text = ""
	}
	out.TextsOf, out.Texts = rec.refOf, rec.refs
	return out
}

// resolveTexts fills in the texts of a context record that it located in
// a display message. It fails when the message does not hold them.
func (d *replayList) resolveTexts(r *record) error {
	if r.TextsOf == "" {
		return nil
	}
	var m *protocol.Message
	if d.live != nil {
		if i := d.live.Index(r.TextsOf); i >= 0 {
			mm := d.live.At(i)
			m = &mm
		}
	} else {
		for i := len(d.msgs) - 1; i >= 0 && m == nil; i-- {
			if d.msgs[i].ID == r.TextsOf {
				m = &d.msgs[i]
			}
		}
	}
	if m == nil {
		return fmt.Errorf("no message %q", r.TextsOf)
	}
	for _, ref := range r.Texts {
		if ref.Context < 0 || ref.Context >= len(r.Context) || ref.Content < 0 || ref.Content >= len(r.Context[ref.Context].Content) ||
			ref.Block < 0 || ref.Block >= len(m.Blocks) {
			return fmt.Errorf("text %+v out of range", ref)
		}
		c := &r.Context[ref.Context].Content[ref.Content]
		blk := m.Blocks[ref.Block]
		c.Text = blk.Content
		if c.Type == model.ContentToolResult {
			c.Text = blk.Result
		}
	}
	return nil
}

// encodeRecord is r as one line of JSON (no HTML escaping: session files
// are read by people too).
func encodeRecord(r record) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("agent: encode session record: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

type metaRecord struct {
	Version  int    `json:"version"`
	ID       string `json:"id"`
	WorkDir  string `json:"workDir"`
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
}

// Open restores a stored session and continues it. Messages reload with
// their reasoning times; anything a crash left unfinished is ended. The
// restored list is the session's state at seq 0; later events continue
// from there.
func Open(opts Options, id string) (*Session, error) {
	return restore(opts, id, "Open", func(display []protocol.Message) protocol.Snapshot {
		return protocol.Snapshot{Messages: display}
	}, nil, nil)
}

// restore loads a stored session's records, rebuilds its context (and the
// display, which view makes the session's state at seq 0 from), opens its
// log for appending, publishes first (events with no seq yet) and starts
// it: the one path of Open and Continue.
//
// shown, when not nil, is what the session's clients were shown (a
// cluster's event log): where the records and shown part, the context is
// rebuilt from shown (see reconcile).
func restore(opts Options, id, caller string, view func(display []protocol.Message) protocol.Snapshot, first []protocol.Event, shown *protocol.Snapshot) (*Session, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("agent: %s needs Options.Store", caller)
	}
	s, err := newSession(opts, id)
	if err != nil {
		return nil, err
	}
	key := store.Key{WorkDir: s.toolEnv.WorkDir, ID: id}
	recs, warnings, err := opts.Store.Load(context.Background(), key)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		s.opts.Logger.Warn(w)
	}
	display, err := s.replay(recs, shown)
	if err != nil {
		return nil, fmt.Errorf("agent: restore session %s: %w", id, err)
	}
	s.bus = newBus(id, view(display))
	l, err := opts.Store.Open(context.Background(), key)
	if err != nil {
		return nil, err
	}
	s.log = newJournal(l)
	for _, ev := range first {
		s.publish(ev)
	}
	s.startSource = "resume"
	s.start()
	return s, nil
}

// replay rebuilds the display list, the context and the rewind marks. With
// shown, the context's tail follows what was shown (see reconcile).
func (s *Session) replay(recs []json.RawMessage, shown *protocol.Snapshot) ([]protocol.Message, error) {
	var d replayList
	// ctxAt is the context's length when a message's first record was
	// read: its context, and everything after it, starts there. base is the
	// display's length at the last record that rebuilt the context
	// (compaction, rewind, clear): positions before it are gone.
	ctxAt := map[string]int{}
	base := 0
	at := func(id string) {
		if _, ok := ctxAt[id]; !ok {
			ctxAt[id] = len(s.ctxMsgs)
		}
	}
	// streamed holds the messages that event records changed since their
	// last message record: a crash cut them. recorded holds those with a
	// message record, whose response is then in the context already.
	streamed, recorded := map[string]bool{}, map[string]bool{}
	for i, raw := range recs {
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			s.opts.Logger.Warn("skipped an unreadable session record", "index", i, "err", err)
			continue
		}
		switch r.Type {
		case recMeta:
			if r.Meta != nil && s.model == "" {
				s.model = r.Meta.Model
			}
		case recTitle:
			s.titled = true
		case recEvent:
			ev, err := protocol.Decode(r.Method, r.Event)
			if err == nil {
				err = d.apply(ev)
			}
			if err != nil {
				s.opts.Logger.Warn("skipped a streamed event of the session file", "index", i, "err", err)
				continue
			}
			switch e := ev.(type) {
			case protocol.AssistantMessageDiscarded:
				delete(streamed, e.MessageID)
			default:
				if id := streamsInto(ev); id != "" {
					streamed[id] = true
				}
			}
		case recMessage:
			if r.Message == nil {
				continue
			}
			m := r.Message.Clone()
			display := d.messages()
			if n := len(display); n > 0 && display[n-1].ID == m.ID {
				display[n-1] = m
			} else {
				display = append(display, m)
			}
			d.msgs = display
			at(m.ID)
			delete(streamed, m.ID)
			recorded[m.ID] = true
			if r.Mark != nil {
				s.marks[m.ID] = *r.Mark
			}
		case recCommit:
			if !d.has(r.ID) {
				s.opts.Logger.Warn("skipped a commit of a message the session file does not hold", "index", i, "id", r.ID)
				continue
			}
			at(r.ID)
			delete(streamed, r.ID)
			recorded[r.ID] = true
			if r.Mark != nil {
				s.marks[r.ID] = *r.Mark
			}
		case recContext:
			if err := d.resolveTexts(&r); err != nil {
				s.opts.Logger.Warn("skipped a context record whose texts the session file does not hold", "index", i, "err", err)
				continue
			}
			s.ctxMsgs = append(s.ctxMsgs, r.Context...)
		case recCompact:
			if r.Message == nil || len(r.Message.Blocks) == 0 {
				continue
			}
			keep := min(max(r.KeepFrom, 0), len(s.ctxMsgs))
			s.ctxMsgs = foldContext(r.Message.Blocks[0].Content, s.ctxMsgs[keep:])
			s.epoch++
			d.msgs = append(d.messages(), r.Message.Clone())
			clear(ctxAt)
			base = len(d.msgs)
		case recRewind:
			display, err := s.rewindTo(d.messages(), r.Anchor)
			if err != nil {
				s.opts.Logger.Warn("skipped a rewind record", "anchor", r.Anchor, "err", err)
				continue
			}
			d.msgs = display
			clear(ctxAt)
			base = len(d.msgs)
		case recClear:
			d.msgs = []protocol.Message{}
			clear(streamed)
			s.ctxMsgs = nil
			s.epoch++
			clear(ctxAt)
			base = 0
		}
	}
	display := d.messages()
	for i := range display {
		m := &display[i]
		cut := streamed[m.ID]
		endUnfinished(m)
		if !cut || m.Role != protocol.RoleAssistant {
			continue
		}
		// The process died while this answer streamed: show it as
		// interrupted, and let the model see what it had said.
		m.Blocks = append(m.Blocks, protocol.Block{Type: protocol.BlockError, Content: crashNote})
		if !recorded[m.ID] && i == len(display)-1 {
			at(m.ID)
			s.ctxMsgs = append(s.ctxMsgs, crashContext(*m)...)
		}
	}
	if shown != nil {
		s.reconcile(display, recorded, ctxAt, base, *shown)
	}
	s.ctxMsgs = repairContext(s.ctxMsgs)
	s.ctxTokens = estimateTokens(s.ctxMsgs)
	return display, nil
}

// crashNote ends an answer that a crash cut.
const crashNote = "Interrupted: sluice stopped before this answer was finished"

// crashPrompt tells the model, on the next request, that its last answer
// was cut by a crash rather than finished.
const crashPrompt = "[Response interrupted: sluice stopped before it was finished]"

// crashContext is what the model is sent of an answer a crash cut: its
// text, then a note that it was interrupted. Reasoning (its signature is
// lost) and tool calls (their parameters may be cut, and they never ran)
// are left out.
func crashContext(m protocol.Message) []model.Message {
	var content []model.Content
	for _, b := range m.Blocks {
		if b.Type == protocol.BlockText && b.Content != "" {
			content = append(content, model.Content{Type: model.ContentText, Text: b.Content})
		}
	}
	var out []model.Message
	if len(content) > 0 {
		out = append(out, model.Message{Role: model.RoleAssistant, Content: content})
	}
	return append(out, model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: crashPrompt}}})
}

// streamsInto is the message whose content an event streams ("" for the
// events that add notes or end a turn: they follow the message's record).
func streamsInto(ev protocol.Event) string {
	switch e := ev.(type) {
	case protocol.AssistantMessageAdded:
		return e.Message.ID
	case protocol.AssistantContentUpdated:
		return e.MessageID
	case protocol.AssistantReasoningUpdated:
		return e.MessageID
	case protocol.ToolBlockUpdated:
		return e.MessageID
	}
	return ""
}

// replayList is the display list being rebuilt. Runs of event records are
// applied with the one reducer (protocol.List); other records edit the
// plain slice. Switching costs a copy of the message headers, once per
// run of events, not per event.
type replayList struct {
	msgs []protocol.Message
	live *protocol.List // non-nil while applying events
}

func (d *replayList) messages() []protocol.Message {
	if d.live != nil {
		d.msgs = d.live.Snapshot().Messages
		d.live = nil
	}
	if d.msgs == nil {
		d.msgs = []protocol.Message{}
	}
	return d.msgs
}

// has reports whether the list holds a message with the id.
func (d *replayList) has(id string) bool {
	if d.live != nil {
		return d.live.Index(id) >= 0
	}
	for _, m := range d.msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}

func (d *replayList) apply(ev protocol.Event) error {
	if d.live == nil {
		d.live = protocol.NewList(protocol.Snapshot{Messages: d.msgs})
		d.msgs = nil
	}
	return d.live.Apply(protocol.WithHeader(ev, protocol.Header{Seq: d.live.Seq() + 1, ParentToolID: ev.Head().ParentToolID}))
}

// endUnfinished ends the blocks that a crash left streaming or running.
func endUnfinished(m *protocol.Message) {
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Type {
		case protocol.BlockText, protocol.BlockReasoning:
			if b.Stage == protocol.StageStreaming {
				b.Stage = protocol.StageEnd
			}
		case protocol.BlockTool:
			if b.Stage != protocol.StageEnd {
				no := false
				b.Stage, b.Success, b.Error = protocol.StageEnd, &no, interruptedTool
			}
			// A subagent the crash cut ends with its call.
			for k := range b.Messages {
				endUnfinished(&b.Messages[k])
			}
		}
	}
}

// interruptedTool is the error of a tool call that a crash cut, and the
// result the model is sent for it.
const interruptedTool = "interrupted: sluice stopped while the tool was running; its output is lost"

// repairContext makes a context that a crash cut after a tool call valid:
// every tool use gets a result.
func repairContext(msgs []model.Message) []model.Message {
	if len(msgs) == 0 {
		return msgs
	}
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleAssistant {
		return msgs
	}
	var results []model.Content
	for _, c := range last.Content {
		if c.Type == model.ContentToolUse {
			results = append(results, model.Content{Type: model.ContentToolResult, ID: c.ID, Text: interruptedTool, IsError: true})
		}
	}
	if len(results) > 0 {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: results})
	}
	return msgs
}

// rewind is Rewind's job.
func (s *Session) rewind(anchor string) error {
	if _, err := s.rewindTo(s.Messages().Messages, anchor); err != nil {
		return err
	}
	s.publish(protocol.MessagesRewound{AnchorMessageID: anchor})
	s.persist(record{Type: recRewind, Time: s.now(), Anchor: anchor})
	return nil
}

// rewindTo cuts display at the last occurrence of the user message anchor
// and the context at the same point: by the mark taken when the message
// was added, or, when the context was rebuilt since (a compaction), from
// what remains displayed.
func (s *Session) rewindTo(display []protocol.Message, anchor string) ([]protocol.Message, error) {
	i := -1
	for k := len(display) - 1; k >= 0; k-- {
		if display[k].ID == anchor {
			i = k
			break
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownMessage, anchor)
	}
	if display[i].Role != protocol.RoleUser {
		return nil, ErrNotUserMessage
	}
	display = display[:i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.marks[anchor]; ok && m.Epoch == s.epoch && m.Len <= len(s.ctxMsgs) {
		s.ctxMsgs = s.ctxMsgs[:m.Len]
	} else {
		s.ctxMsgs = deriveContext(display)
		s.epoch++
	}
	s.ctxTokens = estimateTokens(s.ctxMsgs)
	return display, nil
}

// clear is Clear's job.
func (s *Session) clear() {
	s.mu.Lock()
	s.ctxMsgs = nil
	s.epoch++
	s.ctxTokens = 0
	s.startSource = "clear"
	s.mu.Unlock()
	s.publish(protocol.MessagesCleared{})
	s.persist(record{Type: recClear, Time: s.now()})
}

// deriveContext rebuilds a model context from display messages, from the
// last compaction summary on. Reasoning is left out (its signatures are not
// displayed); tool calls keep their parameters and results.
func deriveContext(display []protocol.Message) []model.Message {
	start := 0
	var out []model.Message
	for i := len(display) - 1; i >= 0; i-- {
		if len(display[i].Blocks) > 0 && display[i].Blocks[0].Type == protocol.BlockCompact {
			out = foldContext(display[i].Blocks[0].Content, nil)
			start = i + 1
			break
		}
	}
	for _, m := range display[start:] {
		out = append(out, messageContext(m, false)...)
	}
	return out
}

// messageContext is what the model is sent of one display message: a user
// message's text (a bang command's with its output), an answer's text and
// its tool calls with their results. Reasoning is left out (its signature
// is not displayed). A tool call counts once it ended; of an answer cut
// before it was finished (cut), also one that began to run or whose
// response the model ended: the clients were shown it ended as
// interrupted, and the model is sent the same. A call still streaming its
// parameters never ran and is left out.
func messageContext(m protocol.Message, cut bool) []model.Message {
	if m.Role == protocol.RoleUser {
		var text string
		if len(m.Blocks) > 1 && m.Blocks[1].Type == protocol.BlockTool {
			cmd := m.Text()
			if len(cmd) > 0 && cmd[0] == '!' {
				cmd = cmd[1:]
			}
			text = bangContext(cmd, m.Blocks[1].Result, m.Blocks[1].Error)
		} else {
			text = m.Text()
		}
		if text == "" {
			return nil // a compaction's or a refused message's: nothing to send
		}
		return []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: text}}}}
	}
	var out []model.Message
	var content, results []model.Content
	for _, b := range m.Blocks {
		switch b.Type {
		case protocol.BlockText:
			if b.Content != "" {
				content = append(content, model.Content{Type: model.ContentText, Text: b.Content})
			}
		case protocol.BlockTool:
			if !json.Valid([]byte(b.Parameters)) || b.ToolID == "" {
				continue
			}
			r := model.Content{Type: model.ContentToolResult, ID: b.ToolID, Text: b.Result, IsError: b.Success == nil || !*b.Success}
			switch {
			case b.Stage == protocol.StageEnd:
			case cut && (b.Stage == protocol.StageRunning || m.StopReason != ""):
				r.Text, r.IsError = interruptedTool, true
			default:
				continue
			}
			content = append(content, model.Content{Type: model.ContentToolUse, ID: b.ToolID, Name: b.Name, Input: json.RawMessage(b.Parameters)})
			results = append(results, r)
		}
	}
	if len(content) > 0 {
		out = append(out, model.Message{Role: model.RoleAssistant, Content: content})
	}
	if len(results) > 0 {
		out = append(out, model.Message{Role: model.RoleUser, Content: results})
	}
	return out
}

// SessionInfo describes a stored session for a list to pick from.
type SessionInfo struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	WorkDir  string    `json:"workDir"`
	Model    string    `json:"model,omitempty"`
	Modified time.Time `json:"modified"`
	Size     int64     `json:"size"`
}

// ListSessions lists the stored sessions of workDir, newest first.
func ListSessions(ctx context.Context, st store.Store, workDir string) ([]SessionInfo, error) {
	infos, err := st.List(ctx, workDir)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(infos))
	for _, in := range infos {
		si := SessionInfo{ID: in.ID, Modified: in.Modified, Size: in.Size, WorkDir: workDir}
		for _, raw := range in.Head {
			var r record
			if json.Unmarshal(raw, &r) != nil {
				continue
			}
			switch r.Type {
			case recMeta:
				if r.Meta != nil {
					si.WorkDir, si.Model = r.Meta.WorkDir, r.Meta.Model
				}
			case recTitle:
				if si.Title == "" {
					si.Title = r.Title
				}
			}
		}
		out = append(out, si)
	}
	return out, nil
}
