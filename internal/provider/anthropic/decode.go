package anthropic

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// decode reads a Messages API event stream from r and yields its parts,
// ending after message_stop. It yields an error, as its last value, when
// the stream fails: ErrNotEventStream when r holds no event at all,
// ErrIncomplete when it ends before message_stop, an *model.APIError for an
// error event, ErrMalformedEvent for an event it cannot read, or the read
// error. wrap turns API errors into what the caller returns.
func decode(r io.Reader, maxEventSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	d := decoder{wrap: wrap}
	err := httpapi.ReadEvents(r, maxEventSize, "anthropic", "message_stop", func(ev sse.Event) (bool, error) {
		if ev.Type == "ping" && d.serverTool {
			// A server-side tool runs: its pings are the only sign of
			// life until its result, and it may run past the idle timeout.
			model.ServerWorking(r)
		}
		return d.event(ev.Type, ev.Data, yield)
	})
	if err != nil {
		yield(model.Part{}, err)
	}
}

type decoder struct {
	wrap  func(*model.APIError) error
	usage model.Usage // totals so far: message_start's, updated by message_delta

	// whole is the content that message_start gave whole (a server that
	// sends a finished message in message_start and then only
	// message_stop), with its stop reason: given as blocks before the
	// message delta unless the stream starts blocks of its own.
	whole               []model.Content
	wholeStop, wholeSeq string
	streamed            bool // a content_block_start came
	delta               bool // a message_delta came

	// serverTool is true from the stop of a server-side tool's call
	// (server_tool_use, mcp_tool_use) until the next block starts: the
	// server is running the tool.
	serverTool bool
	raws       map[int]bool // open blocks that are server-side tool calls

	// startInput holds, by block index, the input of a tool use given
	// whole in its content_block_start: it becomes the block's one delta at
	// its stop unless input_json_delta streams the input instead.
	startInput map[int]string
}

// event handles one SSE event. It returns done when the response is over
// (message_stop, or the consumer stopped) and an error for a failure.
func (d *decoder) event(sseType string, data []byte, yield func(model.Part, error) bool) (done bool, err error) {
	var (
		typ, delta, block, message, usage, errObj []byte
		index                                     int
	)
	err = jsonscan.Object(data, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, err = jsonscan.Unquote(v)
		case "index":
			index, err = jsonscan.Int(v)
		case "delta":
			delta = v
		case "content_block":
			block = v
		case "message":
			message = v
		case "usage":
			usage = v
		case "error":
			errObj = v
		}
		return err
	})
	if err != nil {
		return false, malformed(sseType, data, err)
	}
	if typ == nil {
		typ = []byte(sseType)
	}
	emit := func(p model.Part) bool { return yield(p, nil) }
	switch string(typ) {
	case "content_block_delta":
		p, err := blockDelta(index, delta)
		if err != nil {
			return false, malformed(sseType, data, err)
		}
		if p.Text == "" && p.Delta != model.DeltaRaw {
			return false, nil // an empty fragment (input_json_delta opens with one) says nothing
		}
		if p.Delta == model.DeltaInputJSON {
			delete(d.startInput, index) // the streamed input is the input
		}
		return !emit(p), nil
	case "content_block_start":
		p, input, redacted, err := blockStart(index, block)
		if err != nil {
			return false, malformed(sseType, data, err)
		}
		d.streamed = true
		d.serverTool = false
		if p.Block == model.BlockRaw && strings.HasSuffix(p.Name, "_tool_use") {
			if d.raws == nil {
				d.raws = make(map[int]bool)
			}
			d.raws[index] = true
		}
		if input != "" {
			if d.startInput == nil {
				d.startInput = make(map[int]string)
			}
			d.startInput[index] = input
		}
		if !emit(p) {
			return true, nil
		}
		if redacted != "" {
			// Redacted thinking arrives whole in its start; give it as the
			// block's one delta, as the Part contract says.
			return !emit(model.Part{Type: model.PartBlockDelta, Index: index, Delta: model.DeltaRedacted, Text: redacted}), nil
		}
		return false, nil
	case "content_block_stop":
		if d.raws[index] {
			delete(d.raws, index)
			d.serverTool = true
		}
		if input, ok := d.startInput[index]; ok {
			delete(d.startInput, index)
			if !emit(model.Part{Type: model.PartBlockDelta, Index: index, Delta: model.DeltaInputJSON, Text: input}) {
				return true, nil
			}
		}
		return !emit(model.Part{Type: model.PartBlockStop, Index: index}), nil
	case "message_start":
		p := model.Part{Type: model.PartMessageStart}
		err := jsonscan.Object(message, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "id":
				p.ID, err = jsonscan.String(v)
			case "model":
				p.Model, err = jsonscan.String(v)
			case "usage":
				err = readUsage(v, &d.usage)
			case "content":
				err = jsonscan.Array(v, func(b []byte) error {
					c, err := contentOf(b)
					d.whole = append(d.whole, c)
					return err
				})
			case "stop_reason":
				d.wholeStop, err = jsonscan.String(v)
			case "stop_sequence":
				d.wholeSeq, err = jsonscan.String(v)
			}
			return err
		})
		if err != nil {
			return false, malformed(sseType, data, err)
		}
		// The request sluice sent is the one message_start counts;
		// message_delta's input adds up every request of a server tool's
		// iterations.
		d.usage.ContextTokens = d.usage.InputTokens + d.usage.CacheReadInputTokens + d.usage.CacheCreationInputTokens
		p.Usage = d.usage
		return !emit(p), nil
	case "message_delta":
		if !d.flushWhole(yield) {
			return true, nil
		}
		d.delta = true
		p := model.Part{Type: model.PartMessageDelta}
		err := jsonscan.Object(delta, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "stop_reason":
				p.StopReason, err = jsonscan.String(v)
			case "stop_sequence":
				p.StopSequence, err = jsonscan.String(v)
			}
			return err
		})
		if err == nil && usage != nil {
			err = readUsage(usage, &d.usage)
		}
		if err != nil {
			return false, malformed(sseType, data, err)
		}
		p.Usage = d.usage
		return !emit(p), nil
	case "message_stop":
		if !d.flushWhole(yield) {
			return true, nil
		}
		if !d.delta && d.wholeStop != "" {
			// The stop reason came with the whole message in message_start.
			if !emit(model.Part{Type: model.PartMessageDelta, StopReason: d.wholeStop, StopSequence: d.wholeSeq, Usage: d.usage}) {
				return true, nil
			}
		}
		emit(model.Part{Type: model.PartMessageStop})
		return true, nil
	case "error":
		e := &model.APIError{Provider: "anthropic"}
		err := jsonscan.Object(errObj, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "type":
				e.Type, err = jsonscan.String(v)
			case "message":
				e.Message, err = jsonscan.String(v)
			}
			return err
		})
		if err != nil {
			return false, malformed(sseType, data, err)
		}
		return false, d.wrap(e)
	}
	return false, nil // ping, and event types added after this was written
}

// flushWhole yields the content message_start gave whole, once, unless
// the stream started blocks of its own (which then are the content). It
// reports whether the consumer wants more.
func (d *decoder) flushWhole(yield func(model.Part, error) bool) bool {
	whole := d.whole
	d.whole = nil
	if d.streamed || len(whole) == 0 {
		return true
	}
	r := model.Response{Content: whole}
	for p := range r.Parts() {
		switch p.Type {
		case model.PartBlockStart, model.PartBlockDelta, model.PartBlockStop:
			if !yield(p, nil) {
				return false
			}
		}
	}
	return true
}

// blockStart reads a content_block_start's block. A block's text starts
// empty, whatever the start says: only deltas add to it (servers have been
// seen sending the same text in the start and in a delta). A tool use's
// input is another matter: some servers give it whole in the start and
// stream no input_json_delta, so a non-empty input is returned for the
// caller to give as the block's delta if none comes.
func blockStart(index int, block []byte) (p model.Part, input, redacted string, err error) {
	p = model.Part{Type: model.PartBlockStart, Index: index}
	var typ, id, name, data, in, caller []byte
	err = jsonscan.Object(block, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, err = jsonscan.Unquote(v)
		case "id":
			id = v
		case "name":
			name = v
		case "data":
			data = v
		case "input":
			in = v
		case "caller":
			caller = v
		}
		return err
	})
	if err != nil {
		return p, "", "", err
	}
	switch string(typ) {
	case "text":
		p.Block = model.BlockText
	case "thinking":
		p.Block = model.BlockReasoning
	case "redacted_thinking":
		p.Block = model.BlockRedactedReasoning
		redacted, err = jsonscan.String(data)
	case "tool_use":
		p.Block = model.BlockToolUse
		if p.ID, err = jsonscan.String(id); err == nil {
			p.Name, err = jsonscan.String(name)
		}
		if caller != nil && !jsonscan.IsNull(caller) {
			p.Caller = append([]byte(nil), caller...) // valid JSON, as jsonscan checked
		}
		if in != nil && !emptyInput(in) {
			input = string(in)
		}
	default:
		// Server tools, their results, compaction and kinds added later
		// pass through whole, to be sent back unchanged.
		// jsonscan has checked the whole event: block is valid JSON.
		p.Block = model.BlockRaw
		p.Name = string(typ)
		p.Raw = append([]byte(nil), block...)
	}
	return p, input, redacted, err
}

// emptyInput reports whether a tool use's start input says nothing: {},
// null, or an empty string.
func emptyInput(v []byte) bool {
	empty := true
	if jsonscan.IsNull(v) || string(v) == `""` {
		return true
	}
	err := jsonscan.Object(v, func(k, v []byte) error {
		empty = false
		return nil
	})
	return err == nil && empty
}

// blockDelta reads a content_block_delta's delta.
func blockDelta(index int, delta []byte) (model.Part, error) {
	p := model.Part{Type: model.PartBlockDelta, Index: index}
	var typ, text, citation []byte
	err := jsonscan.Object(delta, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, err = jsonscan.Unquote(v)
		case "text", "thinking", "signature", "partial_json":
			text = v
		case "citation":
			citation = v
		}
		return err
	})
	if err != nil {
		return p, err
	}
	switch string(typ) {
	case "text_delta":
		p.Delta = model.DeltaText
	case "thinking_delta":
		p.Delta = model.DeltaReasoning
	case "signature_delta":
		p.Delta = model.DeltaSignature
	case "input_json_delta":
		p.Delta = model.DeltaInputJSON
	case "citations_delta":
		p.Delta = model.DeltaCitation
		if citation == nil {
			return p, errors.New("citations_delta without its citation")
		}
		p.Text = string(citation) // valid JSON, as jsonscan checked
		return p, nil
	default:
		p.Delta = model.DeltaRaw
		p.Text = string(delta)
		return p, nil
	}
	if text == nil {
		return p, fmt.Errorf("%s without its text", typ)
	}
	p.Text, err = jsonscan.String(text)
	return p, err
}

// readUsage updates u with the counts present in the usage object v; a
// count that is absent or null keeps its value (message_delta repeats only
// some). When the server lists the requests it made itself (iterations:
// a compaction, then the message), the last one's input is the context's
// size.
func readUsage(v []byte, u *model.Usage) error {
	if jsonscan.IsNull(v) {
		return nil
	}
	return jsonscan.Object(v, func(k, v []byte) error {
		var dst *int
		switch string(k) {
		case "iterations":
			if jsonscan.IsNull(v) {
				return nil
			}
			var last model.Usage
			n := 0
			err := jsonscan.Array(v, func(it []byte) error {
				last, n = model.Usage{}, n+1
				return readUsage(it, &last)
			})
			if err == nil && n > 0 {
				u.ContextTokens = last.InputTokens + last.CacheReadInputTokens + last.CacheCreationInputTokens
			}
			return err
		case "input_tokens":
			dst = &u.InputTokens
		case "output_tokens":
			dst = &u.OutputTokens
		case "cache_creation_input_tokens":
			dst = &u.CacheCreationInputTokens
		case "cache_read_input_tokens":
			dst = &u.CacheReadInputTokens
		default:
			return nil
		}
		if jsonscan.IsNull(v) {
			return nil
		}
		n, err := jsonscan.Int(v)
		*dst = n
		return err
	})
}

func malformed(sseType string, data []byte, err error) error {
	return fmt.Errorf("anthropic: %w: %s event: %v (%.80q)", model.ErrMalformedEvent, sseType, err, data)
}

// DecodeStream decodes a Messages API event stream read from r into
// parts, as Stream does with a response body; an error event is an
// *model.APIError. It is exported for benchmarks and tools.
func DecodeStream(r io.Reader, yield func(model.Part, error) bool) {
	decode(r, 0, func(e *model.APIError) error { return e }, yield)
}
