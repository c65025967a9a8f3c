package cclines

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/google/uuid"
)

// A line that carries a whole answer (the assistant line of a finished
// text or thinking block, the result line) is written with that string
// escaped piece by piece into the output buffer. Marshalled whole,
// encoding/json would build the line in a buffer of its own: a second
// copy of the answer, which its pool then keeps for the lines after. The
// bytes written are the same.

// longText is the length from which LineWith writes a string in pieces,
// and the size of a piece.
const longText = 64 << 10

// pieces is what LineWith needs beside the writer's encoder: an encoder
// of small values into buf, and the hole, a string no line holds, that
// stands in for the long one while the rest of the line is encoded.
type pieces struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	hole []byte // the hole as JSON: quoted
	text string
}

// LineWith writes *v as Line does. field points into *v (v is a pointer):
// a long string there is written in pieces. A nil field is line.
func (w *Writer) LineWith(v any, field *string) {
	if field == nil || len(*field) < longText {
		w.Line(v)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.piecesLocked()
	s := *field
	*field = p.text
	p.buf.Reset()
	err := p.enc.Encode(v)
	*field = s
	if err != nil {
		w.err = errors.Join(w.err, err)
		return
	}
	line := p.buf.Bytes()
	at := bytes.Index(line, p.hole)
	if at < 0 || bytes.Contains(line[at+len(p.hole):], p.hole) {
		// The field is not one of the line's (a caller's mistake): the
		// whole line, as Line writes it.
		w.lineLocked(v)
		return
	}
	// The skeleton stays in p.buf, which the pieces are encoded into:
	// write its head first and keep its tail.
	w.out.Write(line[:at])
	tail := append([]byte(nil), line[at+len(p.hole):]...)
	w.writeString(s, longText)
	w.out.Write(tail)
}

func (w *Writer) piecesLocked() *pieces {
	p := &w.pieces
	if p.enc == nil {
		p.enc = json.NewEncoder(&p.buf)
		p.enc.SetEscapeHTML(false)
		// Random: no string of a line (a model's name, a tool's output)
		// can be it.
		p.text = "sluice-long-text-" + uuid.NewString()
		p.hole = []byte(`"` + p.text + `"`)
	}
	return p
}

// writeString writes s as a JSON string, escaped as Line escapes it, in
// pieces of at most max (≥ utf8.UTFMax) bytes. Called with w.mu held.
func (w *Writer) writeString(s string, max int) {
	p := w.piecesLocked()
	w.out.WriteByte('"')
	for len(s) > 0 {
		n := pieceEnd(s, max)
		p.buf.Reset()
		_ = p.enc.Encode(s[:n]) // a string always encodes
		quoted := p.buf.Bytes()
		w.out.Write(quoted[1 : len(quoted)-2]) // without its quotes and newline
		s = s[n:]
	}
	w.out.WriteByte('"')
}

// pieceEnd is where the first piece of s, at most max bytes, ends: before
// a byte that starts a character (or that no character that began before
// it can reach), so that the pieces escape as the whole string does (an
// invalid byte as \ufffd, U+2028 and U+2029 escaped, each once). max is
// at least utf8.UTFMax.
func pieceEnd(s string, max int) int {
	if len(s) <= max {
		return len(s)
	}
	for k := range utf8.UTFMax {
		if utf8.RuneStart(s[max-k]) {
			return max - k
		}
	}
	// Four continuation bytes: none of them belongs to a character that
	// started before the cut.
	return max
}
