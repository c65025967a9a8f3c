package protocol

import (
	"encoding/json"
	"slices"
	"strings"
)

// Role says who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType is the kind of a block.
type BlockType string

const (
	BlockText      BlockType = "text"
	BlockReasoning BlockType = "reasoning"
	BlockTool      BlockType = "tool"
	BlockError     BlockType = "error"
	BlockCompact   BlockType = "compact"
)

// Stage is where a block is in its life. Text and reasoning blocks go
// streaming → end; tool blocks go start → streaming* → running* → end and
// never back.
type Stage string

const (
	StageStart     Stage = "start"
	StageStreaming Stage = "streaming"
	StageRunning   Stage = "running"
	StageEnd       Stage = "end"
)

// toolStageOrder ranks tool stages so that a consumer can refuse to move a
// block backwards.
func toolStageOrder(s Stage) int {
	switch s {
	case StageStart:
		return 1
	case StageStreaming:
		return 2
	case StageRunning:
		return 3
	case StageEnd:
		return 4
	}
	return 0
}

// Usage counts the tokens of one model response, in Anthropic's names.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// Message is one entry of a session's display list.
type Message struct {
	ID         string  `json:"id"`
	Role       Role    `json:"role"`
	CreatedAt  int64   `json:"createdAt"` // Unix ms
	Blocks     []Block `json:"blocks"`
	StopReason string  `json:"stopReason,omitempty"`
	Usage      *Usage  `json:"usage,omitempty"`
}

// Clone returns a copy of m that shares nothing mutable with it. Strings are
// immutable in Go, so copying the block slice is a deep copy.
func (m Message) Clone() Message {
	c := m
	if m.Blocks != nil {
		c.Blocks = slices.Clone(m.Blocks)
		for i := range c.Blocks {
			if b := c.Blocks[i].Success; b != nil {
				v := *b
				c.Blocks[i].Success = &v
			}
			if kids := c.Blocks[i].Messages; kids != nil {
				c.Blocks[i].Messages = make([]Message, len(kids))
				for k, km := range kids {
					c.Blocks[i].Messages[k] = km.Clone()
				}
			}
		}
	} else {
		c.Blocks = []Block{}
	}
	if m.Usage != nil {
		u := *m.Usage
		c.Usage = &u
	}
	return c
}

// Text returns the concatenated content of the message's text blocks.
// A message with one text block returns its content as it is, without a
// copy (strings are immutable): a long streamed answer is not doubled to
// be returned.
func (m Message) Text() string {
	var n, blocks int
	last := ""
	for _, b := range m.Blocks {
		if b.Type == BlockText {
			n += len(b.Content)
			blocks++
			last = b.Content
		}
	}
	if blocks <= 1 {
		return last
	}
	buf := make([]byte, 0, n)
	for _, b := range m.Blocks {
		if b.Type == BlockText {
			buf = append(buf, b.Content...)
		}
	}
	return string(buf)
}

// Block is one part of a message. Which fields are meaningful depends on
// Type; the JSON form carries only those (see MarshalJSON).
type Block struct {
	Type BlockType `json:"type"`

	// Content is the text of text, reasoning, error and compact blocks.
	Content string `json:"content,omitempty"`
	// Stage is set on assistant text, reasoning and tool blocks.
	Stage Stage `json:"stage,omitempty"`
	// StartedAt and EndedAt (Unix ms) time a reasoning block.
	StartedAt int64 `json:"startedAt,omitempty"`
	EndedAt   int64 `json:"endedAt,omitempty"`

	// Tool blocks.
	ToolID string `json:"toolId,omitempty"`
	Name   string `json:"name,omitempty"`
	// Parameters is JSON text: partial while streaming, authoritative from
	// running on.
	Parameters    string `json:"parameters,omitempty"`
	CompactParams string `json:"compactParams,omitempty"`
	Result        string `json:"result,omitempty"`
	ShortResult   string `json:"shortResult,omitempty"`
	Success       *bool  `json:"success,omitempty"`
	Error         string `json:"error,omitempty"`
	// OldText is the text the call replaced (ToolBlockUpdated.OldText).
	OldText string `json:"oldText,omitempty"`
	// Messages are the messages of the child session (a subagent) the
	// tool's call runs: the events whose parentToolId is the block's ToolID
	// build them as the top-level events build the list.
	Messages []Message `json:"messages,omitempty"`
}

// wireBlock fixes the JSON shape per block type: content is always present
// on text-like blocks and parameters on tool blocks, so that a JavaScript
// consumer never meets undefined where it expects a string.
type wireBlock struct {
	Type          BlockType `json:"type"`
	Content       *string   `json:"content,omitempty"`
	Stage         Stage     `json:"stage,omitempty"`
	StartedAt     int64     `json:"startedAt,omitempty"`
	EndedAt       int64     `json:"endedAt,omitempty"`
	ToolID        string    `json:"toolId,omitempty"`
	Name          string    `json:"name,omitempty"`
	Parameters    *string   `json:"parameters,omitempty"`
	CompactParams string    `json:"compactParams,omitempty"`
	Result        *string   `json:"result,omitempty"`
	ShortResult   string    `json:"shortResult,omitempty"`
	Success       *bool     `json:"success,omitempty"`
	Error         string    `json:"error,omitempty"`
	OldText       string    `json:"oldText,omitempty"`
	Messages      []Message `json:"messages,omitempty"`
}

// MarshalJSON writes the fields that belong to the block's type.
func (b Block) MarshalJSON() ([]byte, error) {
	w := wireBlock{
		Type: b.Type, Stage: b.Stage, StartedAt: b.StartedAt, EndedAt: b.EndedAt,
		ToolID: b.ToolID, Name: b.Name, CompactParams: b.CompactParams,
		ShortResult: b.ShortResult, Success: b.Success, Error: b.Error,
	}
	if b.Type == BlockTool {
		w.Parameters = &b.Parameters
		w.OldText = b.OldText
		w.Messages = b.Messages
		if b.Result != "" || b.Stage == StageEnd {
			w.Result = &b.Result
		}
	} else {
		w.Content = &b.Content
	}
	return json.Marshal(w)
}

// Snapshot is the view state of a session after every event up to Seq:
// what List holds.
type Snapshot struct {
	Messages []Message `json:"messages"`
	Seq      int64     `json:"seq"`
	// Running is what the last runStateChanged said.
	Running bool `json:"running"`
	// PendingPermissions are the permissionRequest events up to Seq that no
	// permissionResolved has closed, oldest first: a tool waits for each.
	PendingPermissions []PermissionRequest `json:"pendingPermissions"`
	// Queued is the work waiting behind the run in progress, oldest first
	// (the last queueChanged); absent when nothing waits.
	Queued []QueuedWork `json:"queued,omitempty"`
	// Tasks are the background tasks running, oldest first; absent when
	// none runs.
	Tasks []Task `json:"tasks,omitempty"`
	// Compaction is the compaction in progress; absent when none runs.
	Compaction *Compaction `json:"compaction,omitempty"`
}

// Clone returns a deep copy of s.
func (s Snapshot) Clone() Snapshot {
	c := Snapshot{
		Seq: s.Seq, Messages: make([]Message, len(s.Messages)),
		Running: s.Running, PendingPermissions: append([]PermissionRequest{}, s.PendingPermissions...),
		Queued: slices.Clone(s.Queued), Tasks: slices.Clone(s.Tasks),
		Compaction: s.Compaction.clone(),
	}
	for i, m := range s.Messages {
		c.Messages[i] = m.Clone()
	}
	return c
}

// Digest is a subagent's work at a glance, as faces show it collapsed
// under its Agent call: the tool calls of its assistant messages in order,
// and the last line of its latest non-blank text.
type Digest struct {
	Tools    []Block
	LastLine string
}

// DigestOf digests a subagent's messages (a tool block's Messages).
func DigestOf(msgs []Message) Digest {
	var d Digest
	last := ""
	for _, m := range msgs {
		if m.Role != RoleAssistant {
			continue
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case BlockTool:
				d.Tools = append(d.Tools, b)
			case BlockText:
				if t := strings.TrimSpace(b.Content); t != "" {
					last = t
				}
			}
		}
	}
	if last != "" {
		d.LastLine = last[strings.LastIndexByte(last, '\n')+1:]
	}
	return d
}

func (c *Compaction) clone() *Compaction {
	if c == nil {
		return nil
	}
	d := *c
	return &d
}
