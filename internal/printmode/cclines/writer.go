package cclines

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Writer serialises output lines. Safe for concurrent use; what it writes
// stays in its buffer until Flush.
type Writer struct {
	mu      sync.Mutex
	out     *bufio.Writer
	enc     *json.Encoder
	pieces  pieces  // LineWith's
	ids     lineIDs // deltaLine's
	session string
	err     error
}

// NewWriter returns a writer to out.
func NewWriter(out io.Writer) *Writer {
	return &Writer{out: bufio.NewWriterSize(out, 64<<10)}
}

// SessionID is the session id the lines carry.
func (w *Writer) SessionID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.session
}

// SetSession sets the session id the lines carry.
func (w *Writer) SetSession(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.session = id
}

// Line writes v as one JSON line. Like Claude Code's output (and
// Anthropic's API), it leaves <, > and & as they are.
func (w *Writer) Line(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lineLocked(v)
}

func (w *Writer) lineLocked(v any) {
	if w.enc == nil {
		w.enc = json.NewEncoder(w.out)
		w.enc.SetEscapeHTML(false)
	}
	// The encoder marshals the whole value before it writes, so a value
	// that fails writes nothing.
	if err := w.enc.Encode(v); err != nil {
		w.err = errors.Join(w.err, err)
	}
}

// Raw writes s as it is (the text output format).
func (w *Writer) Raw(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.WriteString(s)
}

// Flush writes what is buffered and returns every error the writer met.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.out.Flush(); err != nil {
		w.err = errors.Join(w.err, err)
	}
	return w.err
}

// Capitalized is s with its first letter upper case, as Claude Code's
// errors are written ("Reached maximum number of turns (1)").
func Capitalized(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
