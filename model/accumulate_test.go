package model

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func collect(r *Response) []Part {
	var parts []Part
	for p := range r.Parts() {
		parts = append(parts, p)
	}
	return parts
}

func TestResponsePartsRoundTrip(t *testing.T) {
	t.Parallel()
	resp := &Response{
		ID: "msg_1", Model: "m", StopReason: StopToolUse, StopSequence: "",
		Usage: Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 3},
		Content: []Content{
			{Type: ContentReasoning, Text: "let me think", Signature: "sig=="},
			{Type: ContentRedactedReasoning, Data: "opaque"},
			{Type: ContentText, Text: "Hello 世界 👋", Citations: json.RawMessage(`[{"type":"a","n":1},{"type":"b"}]`)},
			{Type: ContentRaw, Name: "web_search_tool_result", Raw: json.RawMessage(`{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}`)},
			{Type: ContentToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
			// Gemini's thoughtSignatures, on a text part and a function call.
			{Type: ContentText, Text: "", Signature: "textsig"},
			{Type: ContentToolUse, ID: "call_2", Name: "Read", Input: json.RawMessage(`{}`), Signature: "callsig"},
		},
	}
	parts := collect(resp)
	if parts[0].Type != PartMessageStart || parts[len(parts)-1].Type != PartMessageStop {
		t.Fatalf("parts do not open and close the message: %v ... %v", parts[0].Type, parts[len(parts)-1].Type)
	}
	var acc Accumulator
	for _, p := range parts {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := acc.Response(); !reflect.DeepEqual(got, resp) {
		t.Fatalf("round trip:\ngot  %+v\nwant %+v", got, resp)
	}
}

func TestAccumulator(t *testing.T) {
	t.Parallel()
	start := func(i int, b BlockType) Part { return Part{Type: PartBlockStart, Index: i, Block: b} }
	delta := func(i int, d DeltaType, s string) Part {
		return Part{Type: PartBlockDelta, Index: i, Delta: d, Text: s}
	}
	stop := func(i int) Part { return Part{Type: PartBlockStop, Index: i} }
	tests := []struct {
		name  string
		parts []Part
		want  []Content
	}{
		{"text from deltas only", []Part{start(0, BlockText), delta(0, DeltaText, "a"), delta(0, DeltaText, "b"), stop(0)},
			[]Content{{Type: ContentText, Text: "ab"}}},
		{"zero-argument tool", []Part{{Type: PartBlockStart, Block: BlockToolUse, ID: "t", Name: "now"}, stop(0)},
			[]Content{{Type: ContentToolUse, ID: "t", Name: "now", Input: json.RawMessage("{}")}}},
		{"tool input from fragments", []Part{{Type: PartBlockStart, Block: BlockToolUse, ID: "t", Name: "n"}, delta(0, DeltaInputJSON, `{"a":`), delta(0, DeltaInputJSON, `[1]}`), stop(0)},
			[]Content{{Type: ContentToolUse, ID: "t", Name: "n", Input: json.RawMessage(`{"a":[1]}`)}}},
		{"cut-off tool input left out", []Part{start(0, BlockText), delta(0, DeltaText, "x"), stop(0), {Type: PartBlockStart, Index: 1, Block: BlockToolUse, ID: "t", Name: "n"}, delta(1, DeltaInputJSON, `{"a": "unfinish`)},
			[]Content{{Type: ContentText, Text: "x"}}},
		{"raw block input merged", []Part{{Type: PartBlockStart, Block: BlockRaw, Name: "server_tool_use", Raw: json.RawMessage(`{"type":"server_tool_use","id":"s","input":{}}`)}, delta(0, DeltaInputJSON, `{"q":`), delta(0, DeltaInputJSON, `"x"}`), stop(0)},
			[]Content{{Type: ContentRaw, Name: "server_tool_use", Raw: json.RawMessage(`{"id":"s","input":{"q":"x"},"type":"server_tool_use"}`)}}},
		{"raw block unknown delta sets fields", []Part{{Type: PartBlockStart, Block: BlockRaw, Name: "compaction", Raw: json.RawMessage(`{"type":"compaction","content":null}`)}, delta(0, DeltaRaw, `{"type":"compaction_delta","content":"sum"}`), stop(0)},
			[]Content{{Type: ContentRaw, Name: "compaction", Raw: json.RawMessage(`{"content":"sum","type":"compaction"}`)}}},
		{"interleaved blocks by index", []Part{{Type: PartBlockStart, Index: 0, Block: BlockToolUse, ID: "a", Name: "x"}, {Type: PartBlockStart, Index: 1, Block: BlockToolUse, ID: "b", Name: "y"}, delta(1, DeltaInputJSON, `{"b":`), delta(0, DeltaInputJSON, `{"a":1}`), delta(1, DeltaInputJSON, `2}`), stop(0), stop(1)},
			[]Content{{Type: ContentToolUse, ID: "a", Name: "x", Input: json.RawMessage(`{"a":1}`)}, {Type: ContentToolUse, ID: "b", Name: "y", Input: json.RawMessage(`{"b":2}`)}}},
		{"retry discards", []Part{start(0, BlockText), delta(0, DeltaText, "lost"), {Type: PartRetry, Retry: &Retry{Attempt: 1}}, {Type: PartMessageStart, ID: "m2"}, start(0, BlockText), delta(0, DeltaText, "kept"), stop(0)},
			[]Content{{Type: ContentText, Text: "kept"}}},
		{"signatures of text and tool blocks", []Part{start(0, BlockText), delta(0, DeltaText, "a"), delta(0, DeltaSignature, "s1"), stop(0), {Type: PartBlockStart, Index: 1, Block: BlockToolUse, ID: "t", Name: "n"}, delta(1, DeltaInputJSON, `{}`), delta(1, DeltaSignature, "s2"), stop(1)},
			[]Content{{Type: ContentText, Text: "a", Signature: "s1"}, {Type: ContentToolUse, ID: "t", Name: "n", Input: json.RawMessage(`{}`), Signature: "s2"}}},
		{"stall changes nothing", []Part{start(0, BlockText), delta(0, DeltaText, "a"), {Type: PartStalled}, delta(0, DeltaText, "b")},
			[]Content{{Type: ContentText, Text: "ab"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var acc Accumulator
			for _, p := range tt.parts {
				if err := acc.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if got := acc.Response().Content; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", js(got), js(tt.want))
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAccumulatorRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parts []Part
	}{
		{"delta without start", []Part{{Type: PartBlockDelta, Index: 3, Delta: DeltaText, Text: "x"}}},
		{"stop without start", []Part{{Type: PartBlockStop, Index: 0}}},
		{"started twice", []Part{{Type: PartBlockStart, Block: BlockText}, {Type: PartBlockStart, Block: BlockText}}},
		{"text delta for a tool", []Part{{Type: PartBlockStart, Block: BlockToolUse}, {Type: PartBlockDelta, Delta: DeltaText, Text: "x"}}},
		{"input delta for text", []Part{{Type: PartBlockStart, Block: BlockText}, {Type: PartBlockDelta, Delta: DeltaInputJSON, Text: "{}"}}},
		{"citation not JSON", []Part{{Type: PartBlockStart, Block: BlockText}, {Type: PartBlockDelta, Delta: DeltaCitation, Text: "{"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var acc Accumulator
			var err error
			for _, p := range tt.parts {
				if err = acc.Add(p); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("err = %v, want ErrMalformedEvent", err)
			}
		})
	}
}

func TestAccumulatorUsageAndStop(t *testing.T) {
	t.Parallel()
	var acc Accumulator
	for _, p := range []Part{
		{Type: PartMessageStart, ID: "m", Model: "x", Usage: Usage{InputTokens: 5, OutputTokens: 1}},
		{Type: PartMessageDelta, StopReason: StopMaxTokens, Usage: Usage{InputTokens: 5, OutputTokens: 99}},
		{Type: PartMessageStop},
	} {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := acc.Response()
	if r.ID != "m" || r.Model != "x" || r.StopReason != StopMaxTokens || r.Usage.OutputTokens != 99 || r.Usage.InputTokens != 5 {
		t.Fatalf("got %+v", r)
	}
}

// TestAccumulatorTextFrom: with TextFrom set, the text and reasoning of
// the response are the ones it supplies (the accumulator keeps none of
// those deltas), everything else is accumulated as usual, and Reset keeps
// the source.
func TestAccumulatorTextFrom(t *testing.T) {
	t.Parallel()
	held := map[int]string{}
	acc := Accumulator{TextFrom: func(index int) string { return held[index] }}
	parts := []Part{
		{Type: PartMessageStart, ID: "m"},
		{Type: PartBlockStart, Index: 0, Block: BlockReasoning},
		{Type: PartBlockDelta, Index: 0, Delta: DeltaReasoning, Text: "think"},
		{Type: PartBlockDelta, Index: 0, Delta: DeltaSignature, Text: "sig"},
		{Type: PartBlockStart, Index: 1, Block: BlockText},
		{Type: PartBlockDelta, Index: 1, Delta: DeltaText, Text: "Hello"},
		{Type: PartBlockStart, Index: 2, Block: BlockToolUse, ID: "t", Name: "Bash"},
		{Type: PartBlockDelta, Index: 2, Delta: DeltaInputJSON, Text: `{"command":"ls"}`},
	}
	for _, p := range parts {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
		if p.Delta == DeltaText || p.Delta == DeltaReasoning {
			held[p.Index] += p.Text
		}
	}
	if err := acc.Add(Part{Type: PartBlockDelta, Index: 2, Delta: DeltaText, Text: "x"}); !errors.Is(err, ErrMalformedEvent) {
		t.Fatalf("a text delta for a tool block: %v", err)
	}
	for _, b := range acc.blocks {
		if b.text.Len() != 0 {
			t.Fatalf("block %d kept %q of its own", b.index, b.text.String())
		}
	}
	want := []Content{
		{Type: ContentReasoning, Text: "think", Signature: "sig"},
		{Type: ContentText, Text: "Hello"},
		{Type: ContentToolUse, ID: "t", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
	}
	if got := acc.Response().Content; !reflect.DeepEqual(got, want) {
		t.Fatalf("content\n got %+v\nwant %+v", got, want)
	}
	acc.Reset()
	if acc.TextFrom == nil {
		t.Fatal("Reset dropped TextFrom")
	}
}
