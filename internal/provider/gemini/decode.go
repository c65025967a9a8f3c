package gemini

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/internal/provider/httpapi"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// DecodeEvents reads a streamGenerateContent?alt=sse stream from r (each
// event's data one GenerateContentResponse) and yields it as the same
// Anthropic-shaped parts every provider gives. The stream has no final
// event of its own: it ends with the chunk that carries finishReason (or a
// promptFeedback.blockReason). It yields an error, as its last value, when
// the stream fails: ErrNotEventStream when r holds no event, ErrIncomplete
// when it ends before a finishReason, an *model.APIError for an error
// chunk or a finish that is a failure, ErrMalformedEvent for a chunk it
// cannot read, or the read error. provider names the API in errors
// ("gemini", "vertex"); wrap turns an API error into what is yielded.
func DecodeEvents(r io.Reader, maxEventSize int, provider string, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	t := newTranslator(provider, wrap, yield)
	err := httpapi.ReadEvents(r, maxEventSize, provider, "finishReason", func(ev sse.Event) (bool, error) {
		done, err := t.chunk(ev.Data)
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
var errStopped = errors.New("gemini: consumer stopped")

// GeneratedIDPrefix starts the ids made up for function calls that came
// without one (models before Gemini 3): such ids are not sent back, since
// the server never knew them.
const GeneratedIDPrefix = "gemini_call_"

// translator turns GenerateContentResponse chunks into parts. Text and
// thought runs are blocks that close when the other kind (or a function
// call) starts, or when a part closes them with its thoughtSignature: a
// signature belongs to the part that carried it and goes back on it, so a
// block holds at most one, at its end. A function call arrives whole and
// is a block of its own, opened and closed at once.
type translator struct {
	provider string
	yield    func(model.Part, error) bool
	wrap     func(*model.APIError) error

	started bool
	id      string
	next    int             // index of the next block
	cur     int             // open text or reasoning block, or -1
	curKind model.BlockType // its kind
	calls   int             // function calls, for generated ids
	usage   model.Usage
}

func newTranslator(provider string, wrap func(*model.APIError) error, yield func(model.Part, error) bool) *translator {
	return &translator{provider: provider, wrap: wrap, yield: yield, cur: -1}
}

func (t *translator) emit(p model.Part) error {
	if !t.yield(p, nil) {
		return errStopped
	}
	return nil
}

// chunk handles one GenerateContentResponse; done is true once it held
// the finish.
func (t *translator) chunk(data []byte) (done bool, err error) {
	var candidates, feedback, usage, version, id, errObj []byte
	err = jsonscan.Object(data, func(k, v []byte) error {
		switch string(k) {
		case "candidates":
			candidates = v
		case "promptFeedback":
			feedback = v
		case "usageMetadata":
			usage = v
		case "modelVersion":
			version = v
		case "responseId":
			id = v
		case "error":
			errObj = v
		}
		return nil
	})
	if err != nil {
		return false, t.malformed(data, err)
	}
	if errObj != nil && !jsonscan.IsNull(errObj) {
		return false, t.streamError(errObj)
	}
	if usage != nil && !jsonscan.IsNull(usage) {
		// Each chunk carries the totals so far: the last one wins.
		if err := readUsage(usage, &t.usage); err != nil {
			return false, t.malformed(data, err)
		}
	}
	if !t.started {
		t.started = true
		p := model.Part{Type: model.PartMessageStart, Usage: model.Usage{InputTokens: t.usage.InputTokens, CacheReadInputTokens: t.usage.CacheReadInputTokens}}
		if p.ID, err = jsonscan.String(id); err == nil {
			p.Model, err = jsonscan.String(version)
		}
		if err != nil {
			return false, t.malformed(data, err)
		}
		if p.ID == "" {
			p.ID = randomID()
		}
		t.id = p.ID
		if err := t.emit(p); err != nil {
			return false, err
		}
	}
	var finish, message string
	if candidates != nil && !jsonscan.IsNull(candidates) {
		first := true
		err = jsonscan.Array(candidates, func(c []byte) error {
			if !first {
				return nil // one candidate is asked for; others are ignored
			}
			first = false
			var err error
			finish, message, err = t.candidate(c)
			return err
		})
		if err != nil {
			if errors.Is(err, errStopped) {
				return false, err
			}
			return false, t.malformed(data, err)
		}
	}
	if finish != "" {
		return true, t.finish(finish, message)
	}
	if feedback != nil && !jsonscan.IsNull(feedback) {
		block, message, err := readFeedback(feedback)
		if err != nil {
			return false, t.malformed(data, err)
		}
		if block != "" {
			// The prompt itself was refused: no candidate follows.
			return true, t.refuse("prompt", block, message)
		}
	}
	return false, nil
}

// candidate handles the first candidate of a chunk and returns its
// finishReason and finishMessage, if any.
func (t *translator) candidate(c []byte) (finish, message string, err error) {
	var parts []byte
	err = jsonscan.Object(c, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "content":
			err = jsonscan.Object(v, func(k, v []byte) error {
				if string(k) == "parts" && !jsonscan.IsNull(v) {
					parts = v
				}
				return nil
			})
		case "finishReason":
			finish, err = jsonscan.String(v)
		case "finishMessage":
			message, err = jsonscan.String(v)
		}
		return err
	})
	if err != nil || parts == nil {
		return finish, message, err
	}
	err = jsonscan.Array(parts, t.part)
	return finish, message, err
}

// part handles one Part of the candidate's content.
func (t *translator) part(v []byte) error {
	var text, call, signature []byte
	thought := false
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "text":
			text = v
		case "thought":
			thought = string(v) == "true"
		case "thoughtSignature":
			signature = v
		case "functionCall":
			call = v
		}
		return err
	})
	if err != nil {
		return err
	}
	sig, err := jsonscan.String(signature)
	if err != nil {
		return err
	}
	if call != nil && !jsonscan.IsNull(call) {
		return t.functionCall(call, sig)
	}
	s, err := jsonscan.String(text)
	if err != nil {
		return err
	}
	kind := model.BlockText
	if thought {
		kind = model.BlockReasoning
	}
	if s != "" {
		if err := t.text(kind, s); err != nil {
			return err
		}
	}
	if sig == "" {
		return nil
	}
	// A part that only carries a signature (Gemini streams the answer's
	// signature in a last, empty part) closes the run of its kind; with
	// none open it is a block of its own, so that it goes back.
	if t.cur < 0 || t.curKind != kind {
		if err := t.open(kind); err != nil {
			return err
		}
	}
	if err := t.emit(model.Part{Type: model.PartBlockDelta, Index: t.cur, Delta: model.DeltaSignature, Text: sig}); err != nil {
		return err
	}
	return t.closeText()
}

// text adds s to the open block of kind, opening one if needed.
func (t *translator) text(kind model.BlockType, s string) error {
	if t.cur < 0 || t.curKind != kind {
		if err := t.open(kind); err != nil {
			return err
		}
	}
	d := model.DeltaText
	if kind == model.BlockReasoning {
		d = model.DeltaReasoning
	}
	return t.emit(model.Part{Type: model.PartBlockDelta, Index: t.cur, Delta: d, Text: s})
}

// open starts a text or reasoning block, closing the one before.
func (t *translator) open(kind model.BlockType) error {
	if err := t.closeText(); err != nil {
		return err
	}
	t.cur, t.curKind = t.next, kind
	t.next++
	return t.emit(model.Part{Type: model.PartBlockStart, Index: t.cur, Block: kind})
}

func (t *translator) closeText() error {
	if t.cur < 0 {
		return nil
	}
	i := t.cur
	t.cur = -1
	return t.emit(model.Part{Type: model.PartBlockStop, Index: i})
}

// functionCall handles a functionCall part: {name, args, id}, whole.
func (t *translator) functionCall(v []byte, sig string) error {
	var name, args, id []byte
	err := jsonscan.Object(v, func(k, v []byte) error {
		switch string(k) {
		case "name":
			name = v
		case "args":
			args = v
		case "id":
			id = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	callName, err := jsonscan.String(name)
	if err != nil {
		return err
	}
	callID, err := jsonscan.String(id)
	if err != nil {
		return err
	}
	if callName == "" {
		return errors.New("a functionCall without a name")
	}
	input := "{}"
	if args != nil && !jsonscan.IsNull(args) {
		if args[0] != '{' {
			return fmt.Errorf("functionCall args is not an object: %.40s", args)
		}
		input = string(args) // valid JSON, as jsonscan checked
	}
	if err := t.closeText(); err != nil {
		return err
	}
	t.calls++
	if callID == "" {
		// The agent matches results to calls by id: make one up, unique
		// within the response (and across, as response ids are).
		callID = fmt.Sprintf("%s%s_%d", GeneratedIDPrefix, t.id, t.calls)
	}
	i := t.next
	t.next++
	if err := t.emit(model.Part{Type: model.PartBlockStart, Index: i, Block: model.BlockToolUse, ID: callID, Name: callName}); err != nil {
		return err
	}
	if err := t.emit(model.Part{Type: model.PartBlockDelta, Index: i, Delta: model.DeltaInputJSON, Text: input}); err != nil {
		return err
	}
	if sig != "" {
		if err := t.emit(model.Part{Type: model.PartBlockDelta, Index: i, Delta: model.DeltaSignature, Text: sig}); err != nil {
			return err
		}
	}
	return t.emit(model.Part{Type: model.PartBlockStop, Index: i})
}

// finish ends the message for a finishReason.
func (t *translator) finish(reason, message string) error {
	switch reason {
	case "STOP", "MAX_TOKENS":
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return t.refuse("answer", reason, message)
	case "MALFORMED_FUNCTION_CALL":
		// The model wrote a call that does not parse: another sample
		// usually does not.
		yes := true
		return t.wrap(&model.APIError{Provider: t.provider, Type: reason, Message: finishText("the model produced a malformed function call", message), ShouldRetry: &yes})
	default:
		// OTHER, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS,
		// FINISH_REASON_UNSPECIFIED and reasons not known yet.
		no := false
		return t.wrap(&model.APIError{Provider: t.provider, Type: reason, Message: finishText("the server ended the answer with finishReason "+reason, message), ShouldRetry: &no})
	}
	if err := t.closeText(); err != nil {
		return err
	}
	stop := model.StopEndTurn
	switch {
	case reason == "MAX_TOKENS":
		stop = model.StopMaxTokens
	case t.calls > 0:
		stop = model.StopToolUse // Gemini says STOP after function calls
	}
	return t.end(stop)
}

// refuse ends the message as a refusal, naming the reason in a last text
// block: Gemini stopped (or never began) the answer because of what (the
// "prompt" or the "answer") said.
func (t *translator) refuse(what, reason, message string) error {
	if err := t.closeText(); err != nil {
		return err
	}
	note := fmt.Sprintf("[Gemini blocked the %s: %s]", what, reason)
	if message != "" {
		note = fmt.Sprintf("[Gemini blocked the %s: %s: %s]", what, reason, message)
	}
	if err := t.text(model.BlockText, note); err != nil {
		return err
	}
	if err := t.closeText(); err != nil {
		return err
	}
	return t.end(model.StopRefusal)
}

func (t *translator) end(stop string) error {
	if err := t.emit(model.Part{Type: model.PartMessageDelta, StopReason: stop, Usage: t.usage}); err != nil {
		return err
	}
	return t.emit(model.Part{Type: model.PartMessageStop})
}

func finishText(what, message string) string {
	if message == "" {
		return what
	}
	return what + ": " + message
}

// readFeedback reads promptFeedback's blockReason and blockReasonMessage.
func readFeedback(v []byte) (reason, message string, err error) {
	err = jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "blockReason":
			reason, err = jsonscan.String(v)
		case "blockReasonMessage":
			message, err = jsonscan.String(v)
		}
		return err
	})
	if reason == "BLOCK_REASON_UNSPECIFIED" {
		reason = ""
	}
	return reason, message, err
}

// readUsage reads usageMetadata into Anthropic's terms: input tokens
// exclude the cached ones (promptTokenCount includes them) and add those
// of server-side tool prompts; output tokens include the thoughts, billed
// as output.
func readUsage(v []byte, u *model.Usage) error {
	var prompt, candidates, thoughts, cached, toolPrompt int
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "promptTokenCount":
			prompt, err = jsonscan.Int(v)
		case "candidatesTokenCount":
			candidates, err = jsonscan.Int(v)
		case "thoughtsTokenCount":
			thoughts, err = jsonscan.Int(v)
		case "cachedContentTokenCount":
			cached, err = jsonscan.Int(v)
		case "toolUsePromptTokenCount":
			toolPrompt, err = jsonscan.Int(v)
		}
		return err
	})
	if err != nil {
		return err
	}
	*u = model.Usage{InputTokens: max(prompt-cached, 0) + toolPrompt, OutputTokens: candidates + thoughts, CacheReadInputTokens: cached}
	return nil
}

// streamError reads an error chunk: {"error":{"code","message","status"}}.
func (t *translator) streamError(v []byte) error {
	e := &model.APIError{Provider: t.provider}
	status := 0
	err := jsonscan.Object(v, func(k, v []byte) error {
		var err error
		switch string(k) {
		case "message":
			e.Message, err = jsonscan.String(v)
		case "status":
			e.Type, err = jsonscan.String(v)
		case "code":
			status, _ = jsonscan.Int(v) // a code that is not an int says nothing
		}
		return err
	})
	if err != nil {
		return t.malformed(v, err)
	}
	retry := Retryable(e.Type, status)
	e.ShouldRetry = &retry
	return t.wrap(e)
}

// Retryable says whether an error of Google's status name (and HTTP code)
// may succeed when sent again.
func Retryable(status string, code int) bool {
	switch status {
	case "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "ABORTED":
		return true
	case "":
		return code == 429 || code >= 500
	}
	return false
}

func (t *translator) malformed(data []byte, err error) error {
	return fmt.Errorf("%s: %w: %v (%.80q)", t.provider, model.ErrMalformedEvent, err, data)
}

// randomID names a response that came without a responseId.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "gemini-" + hex.EncodeToString(b[:])
}

// isGenerated reports whether id was made up by the translator.
func isGenerated(id string) bool { return strings.HasPrefix(id, GeneratedIDPrefix) }
