package cclines

import (
	"crypto/rand"
	"strconv"
	"unicode/utf8"

	"github.com/sluicehq/sluice/model"
)

// The stream_event line of a content_block_delta is print mode's line per
// model delta: thousands of them per answer, each a few bytes of text in
// some 300 bytes of envelope. Marshalled by reflection (three nested
// values boxed in interfaces, a UUID read from crypto/rand and formatted
// as a string of its own) it was most of print mode's CPU per delta, so
// deltaLine appends its bytes directly. The tests hold every line it
// writes to encoding/json's for the same value (streamEventLine).

// deltaHead is the head of a delta deltaLine writes, up to the opening
// quote of the delta's string; "" for the kinds it leaves to Line.
func deltaHead(kind model.DeltaType) string {
	switch kind {
	case model.DeltaText:
		return `{"type":"text_delta","text":`
	case model.DeltaReasoning:
		return `{"type":"thinking_delta","thinking":`
	case model.DeltaSignature:
		return `{"type":"signature_delta","signature":`
	case model.DeltaInputJSON:
		return `{"type":"input_json_delta","partial_json":`
	}
	return ""
}

// deltaLine writes the stream_event line of the delta at block index
// whose string is text, its head deltaHead's, as Line would write
// streamEventLine{Type: "stream_event", Event: api.ContentBlockDeltaEvent{...},
// SessionID: w.session, UUID: a new random UUID, APIMessageID: msgID}.
func (w *Writer) deltaLine(index int, head, text, msgID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Appended in the writer's free space: one copy of the line, into the
	// output buffer (a line longer than the space is built in a new array).
	b := w.out.AvailableBuffer()
	b = append(b, `{"type":"stream_event","event":{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"delta":`...)
	b = append(b, head...)
	b = appendJSONString(b, text)
	b = append(b, `}},"session_id":`...)
	b = appendJSONString(b, w.session)
	b = append(b, `,"parent_tool_use_id":null,"uuid":"`...)
	b = w.ids.append(b)
	b = append(b, `","api_message_id":`...)
	b = appendJSONString(b, msgID)
	b = append(b, "}\n"...)
	w.out.Write(b)
}

// appendJSONString appends s as encoding/json writes a string with HTML
// escaping off: quoted; ", \ and the control characters escaped (\b, \f,
// \n, \r, \t short, the others as \u00xx); U+2028 and U+2029 as \u2028 and
// \u2029; each byte of invalid UTF-8 as \ufffd; everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[done:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[done:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[done:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		done = i
	}
	b = append(b, s[done:]...)
	return append(b, '"')
}

// lineIDs makes the random (version 4) UUIDs of delta lines from
// randomness read a batch at a time: one read of crypto/rand per 32 lines.
type lineIDs struct {
	rnd  [32 * 16]byte
	left int // unused bytes at the end of rnd
}

// append appends a new UUID in its canonical form
// (xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx, lower case).
func (ids *lineIDs) append(b []byte) []byte {
	const hex = "0123456789abcdef"
	if ids.left == 0 {
		rand.Read(ids.rnd[:]) // never fails (crypto/rand crashes the program instead)
		ids.left = len(ids.rnd)
	}
	var u [16]byte
	copy(u[:], ids.rnd[len(ids.rnd)-ids.left:])
	ids.left -= len(u)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 9562
	var text [36]byte
	at := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			text[at] = '-'
			at++
		}
		text[at], text[at+1] = hex[c>>4], hex[c&0xf]
		at += 2
	}
	b = append(b, text[:]...)
	return b
}
