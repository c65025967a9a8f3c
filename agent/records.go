package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

type record struct {
	Type     string            `json:"type"`
	Time     int64             `json:"time"`
	Meta     *metaRecord       `json:"meta,omitempty"`
	Title    string            `json:"title,omitempty"`
	Message  *protocol.Message `json:"message,omitempty"`
	Mark     *ctxMark          `json:"mark,omitempty"`
	Context  []model.Message   `json:"context,omitempty"`
	KeepFrom int               `json:"keepFrom,omitempty"`
	Anchor   string            `json:"anchor,omitempty"`
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
	if opts.Store == nil {
		return nil, errors.New("agent: Open needs Options.Store")
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
	display, err := s.replay(recs)
	if err != nil {
		return nil, fmt.Errorf("agent: restore session %s: %w", id, err)
	}
	s.bus = newBus(id, protocol.Snapshot{Messages: display})
	l, err := opts.Store.Open(context.Background(), key)
	if err != nil {
		return nil, err
	}
	s.log = l
	s.start()
	return s, nil
}

// replay rebuilds the display list, the context and the rewind marks.
func (s *Session) replay(recs []json.RawMessage) ([]protocol.Message, error) {
	display := []protocol.Message{}
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
		case recMessage:
			if r.Message == nil {
				continue
			}
			m := r.Message.Clone()
			if n := len(display); n > 0 && display[n-1].ID == m.ID {
				display[n-1] = m
			} else {
				display = append(display, m)
			}
			if r.Mark != nil {
				s.marks[m.ID] = *r.Mark
			}
		case recContext:
			s.ctxMsgs = append(s.ctxMsgs, r.Context...)
		case recCompact:
			if r.Message == nil || len(r.Message.Blocks) == 0 {
				continue
			}
			keep := min(max(r.KeepFrom, 0), len(s.ctxMsgs))
			s.ctxMsgs = foldContext(r.Message.Blocks[0].Content, s.ctxMsgs[keep:])
			s.epoch++
			display = append(display, r.Message.Clone())
		case recRewind:
			var err error
			if display, err = s.rewindTo(display, r.Anchor); err != nil {
				s.opts.Logger.Warn("skipped a rewind record", "anchor", r.Anchor, "err", err)
			}
		case recClear:
			display = []protocol.Message{}
			s.ctxMsgs = nil
			s.epoch++
		}
	}
	for i := range display {
		endUnfinished(&display[i])
	}
	s.ctxMsgs = repairContext(s.ctxMsgs)
	s.ctxTokens = estimateTokens(s.ctxMsgs)
	return display, nil
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
				b.Stage, b.Success, b.Error = protocol.StageEnd, &no, "interrupted"
			}
		}
	}
}

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
			results = append(results, model.Content{Type: model.ContentToolResult, ID: c.ID, Text: "interrupted", IsError: true})
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
			out = append(out, model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: text}}})
			continue
		}
		var content, results []model.Content
		for _, b := range m.Blocks {
			switch b.Type {
			case protocol.BlockText:
				if b.Content != "" {
					content = append(content, model.Content{Type: model.ContentText, Text: b.Content})
				}
			case protocol.BlockTool:
				if b.Stage != protocol.StageEnd || !json.Valid([]byte(b.Parameters)) || b.ToolID == "" {
					continue
				}
				content = append(content, model.Content{Type: model.ContentToolUse, ID: b.ToolID, Name: b.Name, Input: json.RawMessage(b.Parameters)})
				results = append(results, model.Content{Type: model.ContentToolResult, ID: b.ToolID, Text: b.Result, IsError: b.Success == nil || !*b.Success})
			}
		}
		if len(content) > 0 {
			out = append(out, model.Message{Role: model.RoleAssistant, Content: content})
		}
		if len(results) > 0 {
			out = append(out, model.Message{Role: model.RoleUser, Content: results})
		}
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
