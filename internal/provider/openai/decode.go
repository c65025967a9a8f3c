package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// decode reads a Chat Completions event stream from r and yields it as the
// same Anthropic-shaped parts every provider gives, ending after [DONE]. It
// yields an error, as its last value, when the stream fails:
// ErrNotEventStream when r holds no event, ErrIncomplete when it ends
// before [DONE], an *model.APIError for an error chunk, ErrMalformedEvent
// for a chunk it cannot read, or the read error.
func decode(r io.Reader, maxEventSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	t := translator{yield: yield, wrap: wrap}
	err := httpapi.ReadEvents(r, maxEventSize, "openai", "[DONE]", func(ev sse.Event) (bool, error) {
		var err error
		done := string(ev.Data) == "[DONE]"
		if done {
			err = t.done()
		} else {
			err = t.chunk(ev.Data)
		}
		if errors.Is(err, errStopped) {
			return true, nil // the consumer stopped: nothing more is yielded
		}
		return done, err
	})
	if err != nil {
		yield(model.Part{}, err)
	}
}

// errStopped says that the consumer stopped: nothing more is yielded.
var errStopped = errors.New("openai: consumer stopped")

// translator turns chunks into parts. Text and reasoning runs are blocks
// that close when the other kind (or a tool call) starts; each tool call is
// its own block, open until the choice finishes, so that fragments of
// parallel calls interleave safely: they are addressed by block index.
type translator struct {
	yield func(model.Part, error) bool
	wrap  func(*model.APIError) error

	started bool
	id      string
	next    int             // index of the next block
	cur     int             // open text or reasoning block, or -1 (when started)
	curKind model.BlockType // its kind
	calls   []*call         // since the last finish_reason
	last    *call           // the call the last fragment went to
	tools   bool            // the message has tool calls
	closed  bool            // blocks closed at finish_reason
	finish  string
	usage   model.Usage
}

type call struct {
	index   int    // the server's index, or -1 when it gave none
	id      string // the server's id, or a made-up one
	name    string
	block   int    // the block index once started, else -1
	pending []byte // arguments that came before the name
	args    int    // bytes of arguments seen
	valid   bool   // the arguments so far are one complete JSON value
	argText []byte // kept only while needed to tell a new call from a repeat
}

func (t *translator) emit(p model.Part) error {
	if !t.yield(p, nil) {
		return errStopped
	}
	return nil
}

// chunk handles one chat.completion.chunk.
func (t *translator) chunk(data []byte) error {
	var id, mdl, choices, usage, errObj []byte
	err := jsonscan.Object(data, func(k, v []byte) error {
		switch string(k) {
		case "id":
			id = v
		case "model":
			mdl = v
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errObj = v
		}
		return nil
	})
	if err != nil {
		return malformed(data, err)
	}
	if errObj != nil && !jsonscan.IsNull(errObj) {
		return t.streamError(errObj)
	}
	if !t.started {
		t.started, t.cur = true, -1
		p := model.Part{Type: model.PartMessageStart}
		if p.ID, err = jsonscan.String(id); err == nil {
			p.Model, err = jsonscan.String(mdl)
		}
		if err != nil {
			return malformed(data, err)
		}
		t.id = p.ID
		if err := t.emit(p); err != nil {
			return err
		}
	}
	if usage != nil && !jsonscan.IsNull(usage) {
		if err := readUsage(usage, &t.usage); err != nil {
			return malformed(data, err)
		}
	}
	if choices == nil {
		return nil
	}
	err = jsonscan.Array(choices, func(c []byte) error { return t.choice(c) })
	if err != nil && !errors.Is(err, errStopped) && !errors.As(err, new(*model.APIError)) {
		return malformed(data, err)
	}
	return err
}

// choice handles one choice of a chunk; only the first (index 0) is used.
func (t *translator) choice(c []byte) error {
	var (
		index                                 int
		content, reasoning, refusal, toolCall []byte
		finish                                []byte
	)
	err := jsonscan.Object(c, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "index":
			index, err = jsonscan.Int(v)
		case "delta", "message":
			err = jsonscan.Object(v, func(k, v []byte) error {
				switch string(k) {
				case "content":
					content = v
				case "reasoning_content", "reasoning": // DeepSeek, Qwen, llama.cpp, vLLM; OpenRouter, Ollama
					if !jsonscan.IsNull(v) {
						reasoning = v
					}
				case "refusal":
					refusal = v
				case "tool_calls":
					toolCall = v
				}
				return nil
			})
		case "finish_reason":
			finish = v
		}
		return err
	})
	if err != nil || index != 0 {
		return err
	}
	for _, r := range []struct {
		kind model.BlockType
		v    []byte
	}{{model.BlockReasoning, reasoning}, {model.BlockText, content}, {model.BlockText, refusal}} {
		if r.v == nil || jsonscan.IsNull(r.v) {
			continue
		}
		if r.v[0] == '[' {
			if err := contentParts(r.v, model.BlockText, t.text); err != nil {
				return err
			}
			continue
		}
		s, err := jsonscan.String(r.v)
		if err != nil {
			return err
		}
		if err := t.text(r.kind, s); err != nil {
			return err
		}
	}
	if toolCall != nil {
		pos := 0
		err := jsonscan.Array(toolCall, func(v []byte) error {
			pos++
			return t.toolCall(v, pos-1)
		})
		if err != nil {
			return err
		}
	}
	if finish != nil && !jsonscan.IsNull(finish) {
		reason, err := jsonscan.String(finish)
		if err != nil {
			return err
		}
		if reason == "error" {
			// OpenRouter ends a failed generation so, with the error (if
			// any) in the chunk's error field, handled before.
			return t.wrap(&model.APIError{Provider: "openai", Type: "error", Message: "the server ended the response with finish_reason error"})
		}
		t.finish = reason
		return t.close()
	}
	return nil
}

// contentParts reads content given as an array of parts, as Mistral
// sends it: {"type":"text","text":...} parts are text (of kind),
// {"type":"thinking","thinking":[parts]} parts are reasoning whose own
// parts are text. Parts of other types (references, images) are skipped.
func contentParts(v []byte, kind model.BlockType, text func(model.BlockType, string) error) error {
	return jsonscan.Array(v, func(part []byte) error {
		var typ, txt, thinking []byte
		err := jsonscan.Object(part, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "type":
				typ, err = jsonscan.Unquote(v)
			case "text":
				txt = v
			case "thinking":
				thinking = v
			}
			return err
		})
		if err != nil {
			return err
		}
		switch string(typ) {
		case "text":
			s, err := jsonscan.String(txt)
			if err != nil {
				return err
			}
			return text(kind, s)
		case "thinking":
			switch {
			case thinking == nil || jsonscan.IsNull(thinking):
				return nil
			case thinking[0] == '[':
				return contentParts(thinking, model.BlockReasoning, text)
			}
			s, err := jsonscan.String(thinking)
			if err != nil {
				return err
			}
			return text(model.BlockReasoning, s)
		}
		return nil
	})
}

// text adds s to the open block of kind, opening one if needed.
func (t *translator) text(kind model.BlockType, s string) error {
	if s == "" {
		return nil // servers send "" content next to reasoning or tool calls
	}
	t.closed = false // text after finish_reason: rare, kept as a new block
	if t.cur < 0 || t.curKind != kind {
		if err := t.closeText(); err != nil {
			return err
		}
		t.cur, t.curKind = t.next, kind
		t.next++
		if err := t.emit(model.Part{Type: model.PartBlockStart, Index: t.cur, Block: kind}); err != nil {
			return err
		}
	}
	d := model.DeltaText
	if kind == model.BlockReasoning {
		d = model.DeltaReasoning
	}
	return t.emit(model.Part{Type: model.PartBlockDelta, Index: t.cur, Delta: d, Text: s})
}

func (t *translator) closeText() error {
	if t.cur < 0 {
		return nil
	}
	i := t.cur
	t.cur = -1
	return t.emit(model.Part{Type: model.PartBlockStop, Index: i})
}

// toolCall handles one fragment of a tool call, the pos-th of its array.
func (t *translator) toolCall(v []byte, pos int) error {
	var idx, id, name, args []byte
	err := jsonscan.Object(v, func(k, v []byte) error {
		switch string(k) {
		case "index":
			idx = v
		case "id":
			id = v
		case "function":
			return jsonscan.Object(v, func(k, v []byte) error {
				switch string(k) {
				case "name":
					name = v
				case "arguments":
					args = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	index := -1
	if idx != nil && !jsonscan.IsNull(idx) {
		if index, err = jsonscan.Int(idx); err != nil {
			return err
		}
	}
	callID, err := jsonscan.String(id)
	if err != nil {
		return err
	}
	callName, err := jsonscan.String(name)
	if err != nil {
		return err
	}
	fragment, err := arguments(args)
	if err != nil {
		return err
	}
	t.closed = false
	c := t.find(index, pos, callID, callName)
	if c.id == "" && callID != "" {
		c.id = callID
	}
	if c.name == "" && callName != "" {
		c.name = callName
	}
	t.last = c
	if c.block < 0 && c.name != "" {
		if err := t.startCall(c); err != nil {
			return err
		}
	}
	if fragment == "" {
		return nil
	}
	c.args += len(fragment)
	if c.block < 0 {
		c.pending = append(c.pending, fragment...)
		return nil
	}
	c.note(fragment)
	return t.emit(model.Part{Type: model.PartBlockDelta, Index: c.block, Delta: model.DeltaInputJSON, Text: fragment})
}

// find returns the call a fragment belongs to, or a new one. An id names
// its call (servers that repeat an index for parallel calls give each its
// own id). Without an id, the index does; without either, the call the
// previous fragment went to. A fragment that names a function for a call
// that already has a name and complete arguments starts a new call (servers
// that give neither ids nor distinct indices).
func (t *translator) find(index, pos int, id, name string) *call {
	var c *call
	switch {
	case id != "":
		for _, k := range t.calls {
			if k.id == id {
				return k
			}
		}
	case index >= 0:
		for i := len(t.calls) - 1; i >= 0; i-- {
			if t.calls[i].index == index {
				c = t.calls[i]
				break
			}
		}
	case pos == 0:
		c = t.last
	}
	if c != nil && name != "" && c.name != "" && (name != c.name || c.valid) {
		c = nil
	}
	if c != nil {
		return c
	}
	c = &call{index: index, block: -1}
	t.calls = append(t.calls, c)
	t.tools = true
	return c
}

// startCall opens the block of c, closing the text before it.
func (t *translator) startCall(c *call) error {
	if err := t.closeText(); err != nil {
		return err
	}
	if c.id == "" {
		// The agent matches results to calls by id: make one up, unique
		// within the response (and across, as response ids are).
		c.id = fmt.Sprintf("call_%s_%d", t.id, t.next)
	}
	c.block = t.next
	t.next++
	if err := t.emit(model.Part{Type: model.PartBlockStart, Index: c.block, Block: model.BlockToolUse, ID: c.id, Name: c.name}); err != nil {
		return err
	}
	if len(c.pending) > 0 {
		fragment := string(c.pending)
		c.pending = nil
		c.note(fragment)
		return t.emit(model.Part{Type: model.PartBlockDelta, Index: c.block, Delta: model.DeltaInputJSON, Text: fragment})
	}
	return nil
}

// note records fragment's effect on whether c's arguments are complete, to
// tell a repeated name from a new call. Arguments are kept only while they
// are short enough for that to matter.
func (c *call) note(fragment string) {
	if len(c.argText)+len(fragment) > 1<<16 {
		c.argText, c.valid = nil, false
		return
	}
	c.argText = append(c.argText, fragment...)
	c.valid = json.Valid(c.argText)
}

// close ends the choice: open blocks stop, in index order, after calls
// that never got a name are started and calls that got no arguments get
// "{}".
func (t *translator) close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	if err := t.closeText(); err != nil {
		return err
	}
	for _, c := range t.calls {
		if c.block < 0 {
			if err := t.startCall(c); err != nil {
				return err
			}
		}
		if c.args == 0 {
			if err := t.emit(model.Part{Type: model.PartBlockDelta, Index: c.block, Delta: model.DeltaInputJSON, Text: "{}"}); err != nil {
				return err
			}
		}
	}
	for _, c := range t.calls {
		if err := t.emit(model.Part{Type: model.PartBlockStop, Index: c.block}); err != nil {
			return err
		}
	}
	t.calls, t.last = nil, nil
	return nil
}

// done handles [DONE]: the message delta (usage may come after
// finish_reason, in a chunk of its own) and the stop.
func (t *translator) done() error {
	if !t.started {
		return fmt.Errorf("openai: %w: [DONE] before any chunk", model.ErrIncomplete)
	}
	if err := t.close(); err != nil {
		return err
	}
	if err := t.emit(model.Part{Type: model.PartMessageDelta, StopReason: stopReason(t.finish, t.tools), Usage: t.usage}); err != nil {
		return err
	}
	return t.emit(model.Part{Type: model.PartMessageStop})
}

// stopReason translates finish_reason.
func stopReason(finish string, tools bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "stop", "":
		// Ollama and others say "stop" after tool calls.
		if tools {
			return model.StopToolUse
		}
		return model.StopEndTurn
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopRefusal
	}
	return finish
}

// arguments reads a tool call's arguments: a string of JSON text as
// OpenAI sends it, or a JSON value as some compatible servers do.
func arguments(v []byte) (string, error) {
	if v == nil || jsonscan.IsNull(v) {
		return "", nil
	}
	if v[0] == '"' {
		return jsonscan.String(v)
	}
	return string(v), nil // valid JSON, as jsonscan checked
}

// readUsage reads an OpenAI usage object into Anthropic's terms: input
// tokens exclude the cached ones, which are counted apart.
func readUsage(v []byte, u *model.Usage) error {
	var prompt, completion, cached int
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "prompt_tokens":
			prompt, err = jsonscan.Int(v)
		case "completion_tokens":
			completion, err = jsonscan.Int(v)
		case "prompt_cache_hit_tokens": // DeepSeek
			cached, err = jsonscan.Int(v)
		case "prompt_tokens_details":
			if jsonscan.IsNull(v) {
				return nil
			}
			err = jsonscan.Object(v, func(k, v []byte) error {
				if string(k) != "cached_tokens" {
					return nil
				}
				n, err := jsonscan.Int(v)
				cached = max(cached, n)
				return err
			})
		}
		return err
	})
	if err != nil {
		return err
	}
	*u = model.Usage{InputTokens: max(prompt-cached, 0), OutputTokens: completion, CacheReadInputTokens: cached}
	return nil
}

// streamError reads an error chunk: {"error":{"message","type","code"}},
// or {"error":"text"}.
func (t *translator) streamError(v []byte) error {
	e := &model.APIError{Provider: "openai"}
	var code string
	status := 0
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "message":
			e.Message, err = jsonscan.String(v)
		case "type":
			e.Type, err = jsonscan.String(v)
		case "code":
			if len(v) > 0 && v[0] == '"' {
				code, err = jsonscan.String(v)
			} else {
				status, _ = jsonscan.Int(v) // a number that is not an int says nothing
			}
		}
		return err
	})
	if err != nil {
		s, serr := jsonscan.String(v)
		if serr != nil {
			return malformed(v, err)
		}
		e.Message = s
	}
	if e.Type == "" {
		e.Type = code
	}
	if status/100 == 4 && status != 408 && status != 409 && status != 429 {
		// OpenRouter gives the upstream's status as the code: a request
		// refused as such fails the same way again.
		no := false
		e.ShouldRetry = &no
	}
	return t.wrap(e)
}

func malformed(data []byte, err error) error {
	return fmt.Errorf("openai: %w: %v (%.80q)", model.ErrMalformedEvent, err, data)
}
