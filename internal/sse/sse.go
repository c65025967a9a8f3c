// Package sse decodes a server-sent event stream (text/event-stream) by the
// WHATWG HTML rules (§9.2.6, "Interpreting an event stream").
//
// It is written by hand rather than on bufio.Scanner or a library because
// model streams need all of: exact line handling (LF, CRLF and bare CR, a CR
// at the end of one read and its LF at the start of the next), no token
// ceiling short of a configured maximum event size, and few allocations per
// event (an event's data aliases a reused buffer).
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/model"
)

// DefaultMaxEventSize bounds the length of a line and the data of an event
// when NewDecoder is given no other bound. Model streams' largest events
// (web search results) are tens of kilobytes.
const DefaultMaxEventSize = 16 << 20

// ErrTruncated is returned by Next, together with the event, when the stream
// ended in the middle of an event: after its data but before the empty line
// that dispatches it. The WHATWG rules discard such an event; a caller whose
// payloads delimit themselves (a JSON object cannot be cut short and remain
// valid) may use it instead.
var ErrTruncated = errors.New("sse: stream ended before the event's closing empty line")

// Event is one dispatched event.
type Event struct {
	// Type is the event field, "message" when the event had none.
	Type string
	// Data is the event's data lines joined by LF. It aliases the decoder's
	// buffer and is valid until the next call to Next.
	Data []byte
	// ID is the stream's last event ID when the event was dispatched; it
	// persists from event to event until an id field changes it.
	ID string
}

// Decoder reads events from an io.Reader. It is not safe for concurrent use.
type Decoder struct {
	r   io.Reader
	max int

	buf        []byte // read buffer; unread bytes are buf[start:end]
	start, end int
	readErr    error // sticky error of r, reported once buf is drained
	err        error // sticky error of Next

	bomDone bool // the leading byte-order mark, if any, is gone
	skipLF  bool // the last line ended in CR: a LF right after it belongs to it

	data    []byte // data buffer of the event being gathered
	hasData bool   // a data field was seen (data may be empty)
	typ     []byte // event type buffer
	lastID  string
	retry   time.Duration

	names map[string]string // interned event types and ids
}

// NewDecoder returns a decoder reading from r that fails with an error
// wrapping model.ErrEventTooLarge on a line longer than maxEventSize bytes or
// an event whose data (line feeds included) is (DefaultMaxEventSize when
// maxEventSize <= 0). The decoder's memory stays within about twice that.
func NewDecoder(r io.Reader, maxEventSize int) *Decoder {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxEventSize
	}
	return &Decoder{r: r, max: maxEventSize, buf: make([]byte, min(16<<10, maxEventSize+2))}
}

// Retry is the reconnection time the stream last set with a retry field, or 0.
func (d *Decoder) Retry() time.Duration { return d.retry }

// Next returns the next event. At the end of the stream it returns io.EOF,
// or the pending event and ErrTruncated when the stream stopped inside one.
// Any other error is a read error or one wrapping model.ErrEventTooLarge;
// errors are sticky.
func (d *Decoder) Next() (Event, error) {
	if d.err != nil {
		return Event{}, d.err
	}
	d.data = d.data[:0]
	d.hasData = false
	d.typ = d.typ[:0]
	for {
		line, err := d.readLine()
		if err == io.EOF && d.hasData {
			// The stream ended without the empty line that dispatches the
			// event: hand it over, marked, and end there.
			d.err = io.EOF
			return d.event(), ErrTruncated
		}
		if err != nil {
			d.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if d.hasData {
				return d.event(), nil
			}
			d.typ = d.typ[:0]
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		name, value := line, line[len(line):]
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			d.typ = append(d.typ[:0], value...)
		case "data":
			if len(d.data)+len(value)+1 > d.max {
				d.err = d.tooLarge()
				return Event{}, d.err
			}
			d.data = append(d.data, value...)
			d.data = append(d.data, '\n')
			d.hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				d.lastID = d.intern(value)
			}
		case "retry":
			if ms, ok := digits(value); ok {
				d.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// event builds the event gathered so far.
func (d *Decoder) event() Event {
	typ := "message"
	if len(d.typ) > 0 {
		typ = d.intern(d.typ)
	}
	return Event{Type: typ, Data: d.data[:len(d.data)-1], ID: d.lastID}
}

// intern returns b as a string, allocating only the first few times a value
// is seen: event types and ids repeat from event to event.
func (d *Decoder) intern(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < 64 {
		d.names[s] = s
	}
	return s
}

func (d *Decoder) tooLarge() error {
	return fmt.Errorf("sse: event larger than %d bytes: %w", d.max, model.ErrEventTooLarge)
}

// readLine returns the next line without its end (CRLF, LF or CR). The line
// aliases buf and is valid until the next call. At the end of the stream it
// returns io.EOF, after returning a last line that had no line end.
func (d *Decoder) readLine() ([]byte, error) {
	scanned := 0 // bytes of buf[start:] known to hold no line end
	for {
		if !d.bomDone && (d.end-d.start >= 3 || d.readErr != nil) {
			d.bomDone = true
			if bytes.HasPrefix(d.buf[d.start:d.end], bom) {
				d.start += len(bom)
			}
		}
		if d.skipLF && d.start < d.end {
			d.skipLF = false
			if d.buf[d.start] == '\n' {
				d.start++
			}
		}
		if d.bomDone && !d.skipLF {
			rest := d.buf[d.start+scanned : d.end]
			if i := indexEOL(rest); i >= 0 {
				lineEnd := d.start + scanned + i
				line := d.buf[d.start:lineEnd]
				d.start = lineEnd + 1
				if d.buf[lineEnd] == '\r' {
					if d.start < d.end {
						if d.buf[d.start] == '\n' {
							d.start++
						}
					} else {
						d.skipLF = true
					}
				}
				return line, nil
			}
			scanned = d.end - d.start
			if scanned > d.max {
				return nil, d.tooLarge()
			}
		}
		if d.readErr != nil {
			if d.start < d.end && d.bomDone && !d.skipLF {
				line := d.buf[d.start:d.end]
				d.start = d.end
				return line, nil
			}
			return nil, d.readErr
		}
		d.fill()
	}
}

var bom = []byte("\xEF\xBB\xBF")

// indexEOL is the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// fill reads more bytes into buf, moving or growing it as needed.
func (d *Decoder) fill() {
	if d.start > 0 {
		n := copy(d.buf, d.buf[d.start:d.end])
		d.start, d.end = 0, n
	}
	if d.end == len(d.buf) {
		// Up to room for a line of max bytes plus its CRLF: readLine fails
		// before a longer line would need more.
		nb := make([]byte, min(2*len(d.buf), d.max+2))
		copy(nb, d.buf[:d.end])
		d.buf = nb
	}
	for range 100 {
		n, err := d.r.Read(d.buf[d.end:])
		d.end += n
		if err != nil {
			d.readErr = err
			return
		}
		if n > 0 {
			return
		}
	}
	d.readErr = io.ErrNoProgress
}

// digits parses b as a base-ten number of ASCII digits only.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<62)/10 {
			return 0, false // beyond any sensible reconnection time
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
