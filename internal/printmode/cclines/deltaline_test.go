package cclines

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
)

// deltaLineMatches checks that deltaLine writes, for the delta of kind
// with text, the line that Line writes for the same streamEventLine, and
// that its UUID is a fresh random one.
func deltaLineMatches(t *testing.T, kind model.DeltaType, index int, text, session, msgID string) {
	t.Helper()
	got := written(func(w *Writer) {
		w.session = session
		w.deltaLine(index, deltaHead(kind), text, msgID)
	})
	var head struct{ UUID string }
	if err := json.Unmarshal([]byte(got), &head); err != nil {
		t.Fatalf("deltaLine wrote no JSON (%v): %q", err, got)
	}
	id, err := uuid.Parse(head.UUID)
	if err != nil || id.Version() != 4 || id.Variant() != uuid.RFC4122 || id.String() != head.UUID {
		t.Errorf("the line's uuid %q is not a canonical random UUID (%v)", head.UUID, err)
	}
	var delta any
	switch kind {
	case model.DeltaText:
		delta = api.TextDelta{Type: "text_delta", Text: text}
	case model.DeltaReasoning:
		delta = api.ThinkingDelta{Type: "thinking_delta", Thinking: text}
	case model.DeltaSignature:
		delta = api.SignatureDelta{Type: "signature_delta", Signature: text}
	case model.DeltaInputJSON:
		delta = api.InputJSONDelta{Type: "input_json_delta", PartialJSON: text}
	default:
		t.Fatalf("deltaLine does not write delta kind %d", kind)
	}
	want := written(func(w *Writer) {
		w.Line(streamjson.StreamEventLine{
			Type: "stream_event", Event: api.ContentBlockDeltaEvent{Type: "content_block_delta", Index: index, Delta: delta},
			SessionID: session, UUID: head.UUID, APIMessageID: msgID,
		})
	})
	if got != want {
		t.Errorf("deltaLine wrote\n%q\nencoding/json\n%q\n(first difference at %d)", got, want, firstByteDiff(got, want))
	}
}

// Every delta line is byte for byte the line encoding/json writes for it:
// each delta kind, each character JSON escapes or replaces.
func TestDeltaLineIsLine(t *testing.T) {
	t.Parallel()
	texts := []string{"", "plain words ", "a <b> & \"c\"\n", "\\", "\b\f\n\r\t\x00\x01\x1f\x7f", "é😀日本", "\u2028\u2029",
		"\xe2\x80\xa8\xe2\x80", "\xff\xfe", "\x80", "a\xf0\x9f\x98", `{"cmd":"ls -l"}`}
	for _, kind := range []model.DeltaType{model.DeltaText, model.DeltaReasoning, model.DeltaSignature, model.DeltaInputJSON} {
		for i, text := range texts {
			deltaLineMatches(t, kind, i, text, "session-1", "msg_01")
		}
	}
	deltaLineMatches(t, model.DeltaText, 12345, "x", "", "")
	deltaLineMatches(t, model.DeltaText, 0, "x", "odd \"session\"\n", "msg\u2028")
	if deltaHead(model.DeltaCitation) != "" || deltaHead(model.DeltaRaw) != "" {
		t.Error("deltaLine claims a delta kind whose shape is not a string field")
	}
}

// A run of delta lines has a UUID of its own on each line, past the
// batch of randomness lineIDs reads at a time.
func TestDeltaLineUUIDsDiffer(t *testing.T) {
	t.Parallel()
	var ids lineIDs
	seen := map[string]bool{}
	for range 3 * len(ids.rnd) / 16 {
		id := string(ids.append(nil))
		if seen[id] {
			t.Fatalf("uuid %s twice", id)
		}
		seen[id] = true
	}
}

// FuzzDeltaLine: any delta text, session and message id is written as
// encoding/json writes the line.
func FuzzDeltaLine(f *testing.F) {
	for _, s := range []string{"", "plain", "é😀\u2028\u2029", "\xe2\x80\xa8\xe2\x80", "\x80\x80\x80\x80\x80", "\"\\\n\x00<>&\xff\x7f", strings.Repeat("日本語", 20)} {
		f.Add(s, uint8(0), 3, "s", "msg")
	}
	f.Fuzz(func(t *testing.T, text string, kind uint8, index int, session, msgID string) {
		kinds := []model.DeltaType{model.DeltaText, model.DeltaReasoning, model.DeltaSignature, model.DeltaInputJSON}
		deltaLineMatches(t, kinds[int(kind)%len(kinds)], index, text, session, msgID)
	})
}
