package responses

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// decode reads a Responses event stream from r and yields it as the same
// Anthropic-shaped parts every provider gives, ending after
// response.completed or response.incomplete. It yields an error, as its
// last value, when the stream fails: ErrNotEventStream when r holds no
// event, ErrIncomplete when it ends before its final event, an
// *model.APIError for response.failed or an error event, ErrMalformedEvent
// for an event it cannot read, or the read error.
func decode(r io.Reader, maxEventSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	d := decoder{wrap: wrap, yield: yield}
	err := httpapi.ReadEvents(r, maxEventSize, Name, "response.completed", func(ev sse.Event) (bool, error) {
		done, err := d.event(ev.Type, ev.Data)
		if d.working {
			// A built-in tool (web search, code interpreter) reports its
			// progress: no content comes until it is done, which may take
			// longer than the idle timeout.
			d.working = false
			model.ServerWorking(r)
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

// DecodeStream decodes a Responses event stream read from r into parts, as
// Stream does with a response body; a failure is an *model.APIError. It is
// exported for benchmarks and tools.
func DecodeStream(r io.Reader, yield func(model.Part, error) bool) {
	decode(r, 0, func(e *model.APIError) error { return e }, yield)
}

// errStopped says that the consumer stopped: nothing more is yielded.
var errStopped = errors.New("openai-responses: consumer stopped")

// Kinds of output items.
const (
	kindMessage = iota + 1
	kindReasoning
	kindFunction
	kindRaw // built-in tool calls and items added later: passed through whole
)

// decoder turns events into parts. Each output item (addressed by its
// output_index) becomes blocks: a message one text block per content part,
// a reasoning item one reasoning block (its summary parts, or its
// reasoning_text parts, joined by blank lines; its encrypted_content the
// block's signature), a function call one tool use block, any other item
// one raw block. Blocks are numbered in the order they open; text and
// reasoning blocks open at their first text, so that an item with nothing
// to show (reasoning without a summary or encrypted content) adds no block.
type decoder struct {
	yield func(model.Part, error) bool
	wrap  func(*model.APIError) error

	started bool
	id      string
	next    int // index of the next block
	items   map[int]*item
	open    []int // open blocks, in order
	tools   bool  // a function call came
	refused bool  // a refusal came
	working bool  // the last event was a built-in tool's progress
}

type item struct {
	kind  int
	block int // reasoning, function call, raw: the block, or -1
	done  bool

	// message: content parts by content_index.
	parts map[int]*textPart

	// reasoning: text streamed by part (summary or reasoning_text), the
	// part that gave the last text, and whether any text came.
	streamed map[partKey]bool
	last     partKey
	hasText  bool

	// function call: its id, name and the arguments streamed.
	callID, name string
	args         int
	pending      []byte // arguments before the block could start
}

type textPart struct {
	block    int // -1 until its first text
	streamed bool
	closed   bool
}

type partKey struct {
	summary bool
	index   int
}

func (d *decoder) emit(p model.Part) error {
	if !d.yield(p, nil) {
		return errStopped
	}
	return nil
}

// event holds the fields of an event that the decoder reads.
type event struct {
	typ, response, item, part, errObj []byte
	output, content, summary          int
	delta, text, arguments, refusal   []byte
	code, message                     []byte
}

// event handles one SSE event. It returns done when the response is over
// and an error for a failure.
func (d *decoder) event(sseType string, data []byte) (bool, error) {
	if string(data) == "[DONE]" {
		return false, nil // OpenRouter's, after response.completed
	}
	var ev event
	err := jsonscan.Object(data, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			ev.typ, err = jsonscan.Unquote(v)
		case "response":
			ev.response = v
		case "item":
			ev.item = v
		case "part":
			ev.part = v
		case "error":
			ev.errObj = v
		case "output_index":
			ev.output, err = jsonscan.Int(v)
		case "content_index":
			ev.content, err = jsonscan.Int(v)
		case "summary_index":
			ev.summary, err = jsonscan.Int(v)
		case "delta":
			ev.delta = v
		case "text":
			ev.text = v
		case "arguments":
			ev.arguments = v
		case "refusal":
			ev.refusal = v
		case "code":
			ev.code = v
		case "message":
			ev.message = v
		}
		return err
	})
	if err != nil {
		return false, malformed(sseType, data, err)
	}
	typ := string(ev.typ)
	if typ == "" {
		typ = sseType
	}
	if typ == "error" {
		return false, d.streamError(&ev)
	}
	if err := d.start(ev.response); err != nil {
		return false, d.fail(sseType, data, err)
	}
	err = d.handle(typ, &ev)
	if errors.Is(err, errStopped) {
		return true, err
	}
	if err != nil {
		if errors.As(err, new(*model.APIError)) {
			return false, err
		}
		return false, d.fail(sseType, data, err)
	}
	return typ == "response.completed" || typ == "response.incomplete", nil
}

func (d *decoder) fail(sseType string, data []byte, err error) error {
	if errors.Is(err, errStopped) {
		return err
	}
	return malformed(sseType, data, err)
}

func (d *decoder) handle(typ string, ev *event) error {
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		return nil // start read the response's id and model
	case "response.output_item.added":
		return d.itemAdded(ev.output, ev.item)
	case "response.output_item.done":
		return d.itemDone(ev.output, ev.item)
	case "response.content_part.added":
		return nil // a part opens at its first text
	case "response.output_text.delta":
		return d.text(ev.output, ev.content, ev.delta, false)
	case "response.refusal.delta":
		return d.text(ev.output, ev.content, ev.delta, true)
	case "response.output_text.done":
		return d.textDone(ev.output, ev.content, ev.text, false, false)
	case "response.refusal.done":
		return d.textDone(ev.output, ev.content, ev.refusal, true, false)
	case "response.content_part.done":
		return d.partDone(ev.output, ev.content, ev.part)
	case "response.reasoning_summary_part.added":
		return nil // a part's text is set apart when it comes
	case "response.reasoning_summary_text.delta":
		return d.reasoning(ev.output, partKey{true, ev.summary}, ev.delta, false)
	case "response.reasoning_text.delta":
		return d.reasoning(ev.output, partKey{false, ev.content}, ev.delta, false)
	case "response.reasoning_summary_text.done":
		return d.reasoning(ev.output, partKey{true, ev.summary}, ev.text, true)
	case "response.reasoning_text.done":
		return d.reasoning(ev.output, partKey{false, ev.content}, ev.text, true)
	case "response.reasoning_summary_part.done":
		text, err := partText(ev.part)
		if err != nil {
			return err
		}
		return d.reasoning(ev.output, partKey{true, ev.summary}, text, true)
	case "response.function_call_arguments.delta":
		return d.arguments(ev.output, ev.delta, false)
	case "response.function_call_arguments.done":
		return d.arguments(ev.output, ev.arguments, true)
	case "response.completed", "response.incomplete":
		return d.final(ev.response)
	case "response.failed":
		return d.failed(ev.response)
	}
	// Progress of built-in tools (response.web_search_call.searching,
	// response.code_interpreter_call_code.delta, ...), annotations, and
	// event types added after this was written: the items' done events
	// carry what they say.
	if it := d.items[ev.output]; it != nil && it.kind == kindRaw && !it.done {
		d.working = true
	}
	return nil
}

// start emits the message start once, with the id and model of resp (the
// response object of response.created, or of whatever event came first).
func (d *decoder) start(resp []byte) error {
	if d.started {
		return nil
	}
	d.started = true
	p := model.Part{Type: model.PartMessageStart}
	if resp != nil && !jsonscan.IsNull(resp) {
		err := jsonscan.Object(resp, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "id":
				p.ID, err = jsonscan.String(v)
			case "model":
				p.Model, err = jsonscan.String(v)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	d.id = p.ID
	return d.emit(p)
}

// item returns the item at output index i, making one of kind when the
// server skipped its output_item.added.
func (d *decoder) item(i, kind int) *item {
	if it := d.items[i]; it != nil {
		return it
	}
	if d.items == nil {
		d.items = make(map[int]*item)
	}
	it := &item{kind: kind, block: -1}
	d.items[i] = it
	if kind == kindFunction {
		d.tools = true
	}
	return it
}

func (d *decoder) startBlock(p model.Part) (int, error) {
	p.Type, p.Index = model.PartBlockStart, d.next
	d.next++
	d.open = append(d.open, p.Index)
	return p.Index, d.emit(p)
}

func (d *decoder) stopBlock(i int) error {
	k := slices.Index(d.open, i)
	if k < 0 {
		return nil
	}
	d.open = slices.Delete(d.open, k, k+1)
	return d.emit(model.Part{Type: model.PartBlockStop, Index: i})
}

func (d *decoder) delta(i int, t model.DeltaType, s string) error {
	return d.emit(model.Part{Type: model.PartBlockDelta, Index: i, Delta: t, Text: s})
}

// itemHead is what an item's added and done events say of it.
type itemHead struct {
	typ, callID, name, arguments, encrypted string
	id                                      string
	content, summary                        []byte
}

func readItem(v []byte) (itemHead, error) {
	var h itemHead
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			h.typ, err = jsonscan.String(v)
		case "id":
			h.id, err = jsonscan.String(v)
		case "call_id":
			h.callID, err = jsonscan.String(v)
		case "name":
			h.name, err = jsonscan.String(v)
		case "arguments":
			if len(v) > 0 && v[0] != '"' && !jsonscan.IsNull(v) {
				h.arguments = string(v) // a JSON value, as some servers send it
			} else {
				h.arguments, err = jsonscan.String(v)
			}
		case "encrypted_content":
			h.encrypted, err = jsonscan.String(v)
		case "content":
			if !jsonscan.IsNull(v) {
				h.content = v
			}
		case "summary":
			if !jsonscan.IsNull(v) {
				h.summary = v
			}
		}
		return err
	})
	return h, err
}

func kindOf(typ string) int {
	switch typ {
	case "message":
		return kindMessage
	case "reasoning":
		return kindReasoning
	case "function_call":
		return kindFunction
	}
	return kindRaw
}

// itemAdded opens a function call's block (its arguments stream next) or
// a built-in tool's raw block; messages and reasoning open at their text.
func (d *decoder) itemAdded(i int, v []byte) error {
	h, err := readItem(v)
	if err != nil {
		return err
	}
	if it := d.items[i]; it != nil {
		return nil // added twice: the first stands
	}
	it := d.item(i, kindOf(h.typ))
	switch it.kind {
	case kindFunction:
		it.callID, it.name = h.callID, h.name
		if it.callID == "" {
			it.callID = h.id
		}
		return d.startCall(it)
	case kindRaw:
		it.block, err = d.startBlock(model.Part{Block: model.BlockRaw, Name: h.typ, Raw: append([]byte(nil), v...)})
		return err
	}
	return nil
}

// startCall opens a function call's block once its name is known.
func (d *decoder) startCall(it *item) error {
	if it.block >= 0 || it.name == "" {
		return nil
	}
	if it.callID == "" {
		// The agent matches results to calls by id: make one up, unique
		// within the response (and across, as response ids are).
		it.callID = fmt.Sprintf("call_%s_%d", d.id, d.next)
	}
	var err error
	if it.block, err = d.startBlock(model.Part{Block: model.BlockToolUse, ID: it.callID, Name: it.name}); err != nil {
		return err
	}
	if len(it.pending) > 0 {
		s := string(it.pending)
		it.pending = nil
		return d.delta(it.block, model.DeltaInputJSON, s)
	}
	return nil
}

// text adds a message content part's delta. A refusal is text too, and
// makes the stop reason refusal.
func (d *decoder) text(i, content int, v []byte, refusal bool) error {
	s, err := jsonscan.String(v)
	if err != nil {
		return err
	}
	it := d.item(i, kindMessage)
	if it.kind != kindMessage {
		return fmt.Errorf("text for a %s item", kindName(it.kind))
	}
	if refusal {
		d.refused = true
	}
	if s == "" {
		return nil
	}
	p := it.part(content)
	if p.closed {
		return nil // text after its part's done: the done's whole text stood
	}
	if p.block < 0 {
		if p.block, err = d.startBlock(model.Part{Block: model.BlockText}); err != nil {
			return err
		}
	}
	p.streamed = true
	return d.delta(p.block, model.DeltaText, s)
}

func (it *item) part(content int) *textPart {
	if it.parts == nil {
		it.parts = make(map[int]*textPart)
	}
	p := it.parts[content]
	if p == nil {
		p = &textPart{block: -1}
		it.parts[content] = p
	}
	return p
}

// textDone ends a content part's text: its whole text, when no delta gave
// it, becomes the one delta (servers that send the text only whole).
// close also stops the part's block.
func (d *decoder) textDone(i, content int, v []byte, refusal, close bool) error {
	it := d.item(i, kindMessage)
	if it.kind != kindMessage {
		return fmt.Errorf("text for a %s item", kindName(it.kind))
	}
	p := it.part(content)
	if !p.streamed && !p.closed && v != nil {
		if err := d.text(i, content, v, refusal); err != nil {
			return err
		}
		p.streamed = true // the whole text is given once, also when empty
	}
	if refusal {
		d.refused = true
	}
	if !close || p.closed {
		return nil
	}
	p.closed = true
	if p.block >= 0 {
		return d.stopBlock(p.block)
	}
	return nil
}

// partDone handles response.content_part.done: the end of a message's
// text or refusal part, or of a reasoning item's reasoning_text part.
func (d *decoder) partDone(i, content int, part []byte) error {
	var typ string
	var text, refusal []byte
	err := jsonscan.Object(part, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, err = jsonscan.String(v)
		case "text":
			text = v
		case "refusal":
			refusal = v
		}
		return err
	})
	if err != nil {
		return err
	}
	if it := d.items[i]; it != nil && it.kind == kindReasoning {
		return d.reasoning(i, partKey{false, content}, text, true)
	}
	if typ == "refusal" {
		return d.textDone(i, content, refusal, true, true)
	}
	return d.textDone(i, content, text, false, true)
}

// partText is the text of a summary or content part object.
func partText(part []byte) ([]byte, error) {
	var text []byte
	err := jsonscan.Object(part, func(k, v []byte) error {
		if string(k) == "text" {
			text = v
		}
		return nil
	})
	return text, err
}

// reasoning adds a reasoning item's text: a delta of part k, or (whole)
// part k's whole text, used only when no delta of it came. Parts are set
// apart by a blank line.
func (d *decoder) reasoning(i int, k partKey, v []byte, whole bool) error {
	it := d.item(i, kindReasoning)
	if it.kind != kindReasoning {
		return fmt.Errorf("reasoning for a %s item", kindName(it.kind))
	}
	if whole && (v == nil || it.streamed[k]) {
		return nil
	}
	s, err := jsonscan.String(v)
	if err != nil || s == "" {
		return err
	}
	if it.streamed == nil {
		it.streamed = make(map[partKey]bool)
	}
	it.streamed[k] = true
	if it.block < 0 {
		if it.block, err = d.startBlock(model.Part{Block: model.BlockReasoning}); err != nil {
			return err
		}
	}
	if it.hasText && it.last != k {
		s = "\n\n" + s
	}
	it.hasText, it.last = true, k
	return d.delta(it.block, model.DeltaReasoning, s)
}

// arguments adds a function call's arguments: a delta, or (whole) the
// whole arguments, used only when no delta came.
func (d *decoder) arguments(i int, v []byte, whole bool) error {
	it := d.item(i, kindFunction)
	if it.kind != kindFunction {
		return fmt.Errorf("arguments for a %s item", kindName(it.kind))
	}
	if whole && it.args > 0 {
		return nil
	}
	var s string
	var err error
	if len(v) > 0 && v[0] != '"' && !jsonscan.IsNull(v) {
		s = string(v)
	} else if s, err = jsonscan.String(v); err != nil {
		return err
	}
	if s == "" {
		return nil
	}
	it.args += len(s)
	if it.block < 0 {
		it.pending = append(it.pending, s...)
		return nil
	}
	return d.delta(it.block, model.DeltaInputJSON, s)
}

// itemDone finishes an item from its whole form: what no delta gave is
// given whole (a server may send items only whole), a reasoning item's
// encrypted content becomes its signature, a raw block gets the finished
// item's fields, and the item's blocks stop.
func (d *decoder) itemDone(i int, v []byte) error {
	h, err := readItem(v)
	if err != nil {
		return err
	}
	it := d.item(i, kindOf(h.typ))
	if it.done {
		return nil
	}
	switch it.kind {
	case kindMessage:
		if h.content != nil {
			content := 0
			err := jsonscan.Array(h.content, func(part []byte) error {
				content++
				return d.partDone(i, content-1, part)
			})
			if err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(it.parts) {
			if err := d.textDone(i, k, nil, false, true); err != nil {
				return err
			}
		}
	case kindReasoning:
		if h.summary != nil {
			n := 0
			err := jsonscan.Array(h.summary, func(part []byte) error {
				n++
				text, err := partText(part)
				if err != nil {
					return err
				}
				return d.reasoning(i, partKey{true, n - 1}, text, true)
			})
			if err != nil {
				return err
			}
		}
		if h.content != nil && !it.hasText {
			// reasoning_text parts (open-weight models), given whole.
			n := 0
			err := jsonscan.Array(h.content, func(part []byte) error {
				n++
				text, err := partText(part)
				if err != nil {
					return err
				}
				return d.reasoning(i, partKey{false, n - 1}, text, true)
			})
			if err != nil {
				return err
			}
		}
		if h.encrypted != "" {
			if it.block < 0 {
				if it.block, err = d.startBlock(model.Part{Block: model.BlockReasoning}); err != nil {
					return err
				}
			}
			if err := d.delta(it.block, model.DeltaSignature, h.encrypted); err != nil {
				return err
			}
		}
	case kindFunction:
		if it.name == "" {
			it.name = h.name
		}
		if it.callID == "" {
			it.callID = first(h.callID, h.id)
		}
		if it.name == "" {
			return errors.New("function call without its name")
		}
		if err := d.startCall(it); err != nil {
			return err
		}
		if it.args == 0 && h.arguments != "" {
			it.args = len(h.arguments)
			if err := d.delta(it.block, model.DeltaInputJSON, h.arguments); err != nil {
				return err
			}
		}
	case kindRaw:
		if it.block < 0 {
			if it.block, err = d.startBlock(model.Part{Block: model.BlockRaw, Name: h.typ, Raw: append([]byte(nil), v...)}); err != nil {
				return err
			}
		} else if err := d.delta(it.block, model.DeltaRaw, string(v)); err != nil {
			// The finished item's fields (status, action, results) replace
			// the in-progress ones the block started with.
			return err
		}
	}
	it.done = true
	if it.block >= 0 {
		return d.stopBlock(it.block)
	}
	return nil
}

func sortedKeys(m map[int]*textPart) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func kindName(kind int) string {
	return [...]string{"", "message", "reasoning", "function_call", "built-in tool"}[kind]
}

// final handles the response object of response.completed or
// response.incomplete: items the stream did not give are taken from its
// output, open blocks stop, and the stop reason and usage end the message.
func (d *decoder) final(resp []byte) error {
	var status, reason string
	var usage model.Usage
	var output []byte
	err := jsonscan.Object(resp, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "status":
			status, err = jsonscan.String(v)
		case "output":
			output = v
		case "usage":
			err = readUsage(v, &usage)
		case "incomplete_details":
			if !jsonscan.IsNull(v) {
				err = jsonscan.Object(v, func(k, v []byte) error {
					var err error
					if string(k) == "reason" {
						reason, err = jsonscan.String(v)
					}
					return err
				})
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if status == "failed" {
		return d.failed(resp)
	}
	if len(d.items) == 0 && output != nil && !jsonscan.IsNull(output) {
		// A server that sends the output only whole, in the final event
		// (and the non-streaming answer).
		n := 0
		err := jsonscan.Array(output, func(v []byte) error {
			n++
			return d.itemDone(n-1, v)
		})
		if err != nil {
			return err
		}
	}
	for len(d.open) > 0 {
		if err := d.stopBlock(d.open[0]); err != nil {
			return err
		}
	}
	stop := model.StopEndTurn
	switch {
	case status == "incomplete" || reason != "":
		switch reason {
		case "max_output_tokens", "":
			stop = model.StopMaxTokens
		case "content_filter":
			stop = model.StopRefusal
		default:
			stop = reason
		}
	case d.tools:
		stop = model.StopToolUse
	case d.refused:
		stop = model.StopRefusal
	}
	if err := d.emit(model.Part{Type: model.PartMessageDelta, StopReason: stop, Usage: usage}); err != nil {
		return err
	}
	return d.emit(model.Part{Type: model.PartMessageStop})
}

// whole translates a non-streaming answer, a response object.
func (d *decoder) whole(resp []byte) error {
	if err := d.start(resp); err != nil {
		return malformed("response", resp, err)
	}
	err := d.final(resp)
	if err != nil && !errors.As(err, new(*model.APIError)) && !errors.Is(err, model.ErrContextOverflow) {
		return malformed("response", resp, err)
	}
	return err
}

// readUsage reads a Responses usage object into Anthropic's terms: input
// tokens exclude the cached ones, which are counted apart. Reasoning
// tokens are part of the output tokens, as they are billed.
func readUsage(v []byte, u *model.Usage) error {
	if jsonscan.IsNull(v) {
		return nil
	}
	var input, cached int
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "input_tokens":
			input, err = jsonscan.Int(v)
		case "output_tokens":
			u.OutputTokens, err = jsonscan.Int(v)
		case "input_tokens_details":
			if jsonscan.IsNull(v) {
				return nil
			}
			err = jsonscan.Object(v, func(k, v []byte) error {
				var err error
				if string(k) == "cached_tokens" && !jsonscan.IsNull(v) {
					cached, err = jsonscan.Int(v)
				}
				return err
			})
		}
		return err
	})
	u.InputTokens, u.CacheReadInputTokens = max(input-cached, 0), cached
	return err
}

// failed reads response.failed's response: its error, with the server's
// code and message.
func (d *decoder) failed(resp []byte) error {
	var errObj []byte
	err := jsonscan.Object(resp, func(k, v []byte) error {
		if string(k) == "error" {
			errObj = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	e := &model.APIError{Provider: Name}
	if errObj != nil && !jsonscan.IsNull(errObj) {
		if err := readError(errObj, e); err != nil {
			return err
		}
	}
	if e.Message == "" && e.Type == "" {
		e.Message = "the response failed"
	}
	return d.apiError(e)
}

// streamError reads an error event: {"type":"error","code","message",
// "param"}, or its error nested as {"error":{"type","code","message"}}.
func (d *decoder) streamError(ev *event) error {
	e := &model.APIError{Provider: Name}
	var err error
	if ev.errObj != nil && !jsonscan.IsNull(ev.errObj) && ev.errObj[0] == '{' {
		err = readError(ev.errObj, e)
	}
	if err == nil && e.Type == "" && ev.code != nil && !jsonscan.IsNull(ev.code) {
		e.Type, err = codeString(ev.code)
	}
	if err == nil && e.Message == "" {
		e.Message, err = jsonscan.String(ev.message)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: error event: %v", Name, model.ErrMalformedEvent, err)
	}
	if e.Message == "" && e.Type == "" {
		e.Message = "the server sent an error event"
	}
	return d.apiError(e)
}

func readError(v []byte, e *model.APIError) error {
	var typ string
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "code":
			e.Type, err = codeString(v)
		case "type":
			typ, err = jsonscan.String(v)
		case "message":
			e.Message, err = jsonscan.String(v)
		}
		return err
	})
	if e.Type == "" {
		e.Type = typ
	}
	return err
}

// codeString reads an error code: a string, or a number some servers send.
func codeString(v []byte) (string, error) {
	if len(v) > 0 && v[0] != '"' {
		return string(v), nil // valid JSON, as jsonscan checked
	}
	return jsonscan.String(v)
}

// tryAgain finds the wait a rate limit message asks for ("Please try again
// in 1.898s", "in 20ms").
//
// Compiled on first use: every command of the binary would pay it at init.
var tryAgain = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b`)
})

// apiError sets whether e may be retried, from its code, and wraps it.
// Failures of the request itself (invalid, over quota, too long) fail the
// same way again; the server's own (server_error, rate limits, overload)
// and codes not known here are retried.
func (d *decoder) apiError(e *model.APIError) error {
	code := e.Type
	switch {
	case code == "insufficient_quota", code == "invalid_prompt", code == "context_length_exceeded",
		code == "usage_not_included", code == "model_not_found", code == "unsupported_parameter",
		strings.HasPrefix(code, "invalid_"), strings.Contains(code, "image"):
		no := false
		e.ShouldRetry = &no
	case code == "rate_limit_exceeded":
		if m := tryAgain().FindStringSubmatch(e.Message); m != nil {
			n, _ := strconv.ParseFloat(m[1], 64)
			unit := time.Second
			if strings.EqualFold(m[2], "ms") {
				unit = time.Millisecond
			}
			if n > 0 && n < 3600 {
				e.RetryAfter = time.Duration(n * float64(unit))
			}
		}
	}
	return d.wrap(e)
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func malformed(sseType string, data []byte, err error) error {
	return fmt.Errorf("%s: %w: %s event: %v (%.80q)", Name, model.ErrMalformedEvent, sseType, err, data)
}
