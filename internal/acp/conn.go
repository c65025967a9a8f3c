package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxLineBytes bounds one incoming JSON-RPC line. The SDK's reader
// gives up on the whole connection past 10 MiB; the filter answers a longer
// line with an error and skips it before the SDK sees it.
const DefaultMaxLineBytes = 8 << 20

// JSON-RPC error codes the filter answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// lockedWriter serialises whole messages: the SDK writes each message with
// one Write, and so does the filter, so lines never interleave. It counts
// the responses that go out (see tally).
type lockedWriter struct {
	mu    *sync.Mutex // shared by the writers of one stream
	w     io.Writer
	tally *tally // nil: not counted
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.w.Write(p)
	l.mu.Unlock()
	if l.tally != nil && isResponse(p) {
		l.tally.add(0, 1)
	}
	return n, err
}

// tally counts the requests passed to the SDK and the responses it wrote,
// so that Serve can wait for every answer before it returns: the SDK
// writes a response after the method has returned, and gives no way to
// wait for it.
type tally struct {
	mu      sync.Mutex
	cond    *sync.Cond
	in, out int64
}

func newTally() *tally {
	t := &tally{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

func (t *tally) add(in, out int64) {
	t.mu.Lock()
	t.in += in
	t.out += out
	t.mu.Unlock()
	t.cond.Broadcast()
}

// wait returns once every request counted has its response.
func (t *tally) wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.out < t.in {
		t.cond.Wait()
	}
}

// isResponse reports whether an outgoing message is a response: it has a
// result or an error before any method. Only the first keys are read.
func isResponse(msg []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		switch key {
		case "method":
			return false
		case "result", "error":
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// filterLines copies the JSON-RPC messages of in to out, one per line, and
// answers what is not one on errs instead of passing it on: a line that is
// not JSON (parse error), one that is not a request, notification or
// response (invalid request), and one longer than max (invalid request,
// the rest of the line skipped). Requests passed on are counted in t when
// it is not nil. It returns when in ends.
//
// seen, when set, is given each request before the SDK reads it.
func filterLines(in io.Reader, out io.Writer, errs io.Writer, max int, t *tally, seen func(msg []byte)) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		tooLong := false
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if len(line)+len(chunk) > max {
				tooLong = true
				line = line[:0]
				err = skipLine(br)
			} else {
				line = append(line, chunk...)
				continue
			}
		default:
			line = append(line, chunk...)
		}
		if tooLong || len(line) > max {
			writeError(errs, nil, codeInvalidRequest, fmt.Sprintf("message longer than %d bytes skipped", max))
		} else if msg, request, ok := checkLine(line, errs); ok {
			// Counted before it can be answered; uncounted again if it
			// never reached the SDK.
			if request && t != nil {
				t.add(1, 0)
			}
			if request && seen != nil {
				seen(msg)
			}
			if _, werr := out.Write(msg); werr != nil {
				if request && t != nil {
					t.add(-1, 0)
				}
				return werr
			}
		}
		line = line[:0]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// skipLine discards the rest of a line.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// envelope is what the filter checks of a message.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// checkLine returns the line to pass on (compacted onto one line, ending in
// a newline) and whether it is a request (it will be answered), or answers
// it on errs.
func checkLine(line []byte, errs io.Writer) (msg []byte, request, ok bool) {
	body := bytes.TrimSpace(line)
	if len(body) == 0 {
		return nil, false, false
	}
	if !json.Valid(body) {
		writeError(errs, nil, codeParseError, "the line is not JSON")
		return nil, false, false
	}
	var env envelope
	if body[0] != '{' || json.Unmarshal(body, &env) != nil {
		writeError(errs, nil, codeInvalidRequest, "a message must be a JSON object")
		return nil, false, false
	}
	id := bytes.TrimSpace(env.ID)
	if len(id) > 0 && id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') && !bytes.Equal(id, []byte("null")) {
		writeError(errs, nil, codeInvalidRequest, "id must be a string, a number or null")
		return nil, false, false
	}
	if len(id) == 0 {
		id = nil
	}
	switch {
	case env.JSONRPC != "2.0":
		if id != nil || env.Method != nil {
			writeError(errs, id, codeInvalidRequest, `jsonrpc must be "2.0"`)
		}
		return nil, false, false
	case env.Method == nil && id == nil:
		writeError(errs, nil, codeInvalidRequest, "a message needs a method or an id")
		return nil, false, false
	case env.Method != nil && *env.Method == "":
		if id != nil {
			writeError(errs, id, codeInvalidRequest, "method must not be empty")
		}
		return nil, false, false
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + 1)
	if err := json.Compact(&buf, body); err != nil {
		return nil, false, false // json.Valid said it was JSON
	}
	buf.WriteByte('\n')
	// A request has an id and a method; the SDK takes "id": null for a
	// notification and answers nothing.
	return buf.Bytes(), id != nil && !bytes.Equal(id, []byte("null")) && env.Method != nil, true
}

// writeError writes a JSON-RPC error response (id null when nil).
func writeError(w io.Writer, id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
