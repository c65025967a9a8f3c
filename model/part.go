package model

import (
	"encoding/json"
	"time"
)

// PartType is the kind of a Part.
type PartType uint8

const (
	// PartMessageStart opens a response: ID, Model, Usage (input so far).
	PartMessageStart PartType = iota + 1
	// PartBlockStart opens block Index of kind Block, with ID and Name for a
	// tool use, or Raw (the whole block as the server started it) for a raw
	// block. A block's text starts empty: only deltas add to it, even when a
	// server repeats the text in the start.
	PartBlockStart
	// PartBlockDelta adds Text to block Index; Delta says what it is.
	PartBlockDelta
	// PartBlockStop closes block Index.
	PartBlockStop
	// PartMessageDelta carries StopReason, StopSequence and Usage (the
	// response's totals so far, not an increment).
	PartMessageDelta
	// PartMessageStop ends the response. A stream that ends without it is
	// an error, never a success.
	PartMessageStop
	// PartRetry says that the attempt in progress failed (Retry) and will be
	// retried after Retry.Delay: everything since the last PartMessageStart
	// (or since the stream began) is void. Only Stream produces it.
	PartRetry
	// PartStalled says that no byte has arrived for Idle; the attempt goes
	// on. Only Stream produces it.
	PartStalled
)

var partTypeNames = [...]string{"", "message_start", "block_start", "block_delta", "block_stop", "message_delta", "message_stop", "retry", "stalled"}

func (t PartType) String() string {
	if int(t) < len(partTypeNames) {
		return partTypeNames[t]
	}
	return "part(?)"
}

// BlockType is the kind of a streamed block.
type BlockType uint8

const (
	BlockText BlockType = iota + 1
	BlockReasoning
	BlockRedactedReasoning // Text of its single delta is the opaque data
	BlockToolUse
	BlockRaw // a server-side or unknown block, passed through whole
)

var blockTypeNames = [...]string{"", "text", "reasoning", "redacted_reasoning", "tool_use", "raw"}

func (t BlockType) String() string {
	if int(t) < len(blockTypeNames) {
		return blockTypeNames[t]
	}
	return "block(?)"
}

// DeltaType says what a PartBlockDelta's Text is.
type DeltaType uint8

const (
	DeltaText      DeltaType = iota + 1 // text to append
	DeltaReasoning                      // reasoning text to append
	DeltaSignature                      // a block's signature (appended; sent whole): a reasoning block's (Anthropic), or a text or tool use block's (Gemini's thoughtSignature)
	DeltaInputJSON                      // a fragment of a tool use's (or raw block's) JSON input
	DeltaCitation                       // one citation, as JSON, for the text block
	DeltaRaw                            // an unknown delta of a raw block, as JSON
	DeltaRedacted                       // the opaque data of a redacted reasoning block
)

var deltaTypeNames = [...]string{"", "text", "reasoning", "signature", "input_json", "citation", "raw", "redacted"}

func (t DeltaType) String() string {
	if int(t) < len(deltaTypeNames) {
		return deltaTypeNames[t]
	}
	return "delta(?)"
}

// Part is one step of a streamed response. It is a flat value so that a
// delta costs no allocation beyond its text; which fields are set depends on
// Type.
type Part struct {
	Type  PartType
	Index int // block index within the response

	Block BlockType // PartBlockStart
	Delta DeltaType // PartBlockDelta
	Text  string    // PartBlockDelta: the fragment

	ID   string          // PartMessageStart: message id; PartBlockStart: tool use id
	Name string          // PartBlockStart: tool name (or raw block's type)
	Raw  json.RawMessage // PartBlockStart of BlockRaw: the block as started
	// Caller is, on the PartBlockStart of a tool use that code running on
	// the server made (Anthropic's programmatic tool calling), who called
	// it, as the server said: it goes back to the server with the call.
	Caller json.RawMessage

	Model        string // PartMessageStart
	StopReason   string // PartMessageDelta
	StopSequence string // PartMessageDelta
	Usage        Usage  // PartMessageStart, PartMessageDelta

	Retry *Retry        // PartRetry
	Idle  time.Duration // PartStalled
}

// Retry describes a failed attempt that is about to be retried.
type Retry struct {
	Attempt int           // 1 for the first retry
	Delay   time.Duration // before the next attempt
	Err     error         // why the attempt failed
	// Fallback is true when the next attempt is the non-streaming request.
	Fallback bool
	// Model, when set, is the fallback model the next attempt asks
	// (StreamOptions.FallbackModels): the request's model was unavailable.
	Model string
}
