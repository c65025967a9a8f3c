package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Conn carries whole JSON-RPC messages, one at a time, in both directions:
// a line of stdio (LineConn), a WebSocket message, an in-memory pipe.
//
// Read returns the next message; it is called from one goroutine at a time.
// It returns an error wrapping ErrMessageTooLarge for a message over the
// connection's limit, after which the connection is still usable (the
// message was skipped); any other error ends the connection (io.EOF when
// the peer closed it cleanly). Read should return when ctx is done; an
// implementation whose reads cannot be interrupted must at least return
// once Close has been called.
//
// Write sends one message; the Server calls it from one goroutine at a
// time. The message is a complete JSON value without a trailing newline.
//
// Close releases the connection and unblocks a pending Read or Write. It
// may be called more than once and from any goroutine.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// ErrMessageTooLarge is returned (wrapped) by Conn.Read for a message over
// the connection's size limit. The message has been skipped.
var ErrMessageTooLarge = errors.New("message too large")

// DefaultMaxMessageBytes is LineConn's default limit on one incoming line.
const DefaultMaxMessageBytes = 16 << 20

// LineConn is a Conn that carries one JSON message per line (JSON Lines):
// the framing of `sluice rpc` on stdin/stdout. Lines may be of any length
// up to the limit; a longer line is skipped whole (Read reports
// ErrMessageTooLarge and the next Read starts after it). Empty lines are
// ignored and a trailing "\r" is dropped.
type LineConn struct {
	r      *bufio.Reader
	w      io.Writer
	closer []io.Closer
	max    int

	wmu  sync.Mutex
	wbuf []byte

	closeOnce sync.Once
	closed    chan struct{}
}

// NewLineConn returns a LineConn reading r and writing w, with a limit of
// maxMessage bytes per incoming line (DefaultMaxMessageBytes when <= 0).
// Close closes r and w when they are io.Closers.
func NewLineConn(r io.Reader, w io.Writer, maxMessage int) *LineConn {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessageBytes
	}
	c := &LineConn{r: bufio.NewReaderSize(r, 64<<10), w: w, max: maxMessage, closed: make(chan struct{})}
	if rc, ok := r.(io.Closer); ok {
		c.closer = append(c.closer, rc)
	}
	if wc, ok := w.(io.Closer); ok && any(wc) != any(r) {
		c.closer = append(c.closer, wc)
	}
	return c
}

// Read returns the next non-empty line without its line end. The returned
// slice is the caller's. A last line without a line end counts as a line.
//
// A read blocked in the underlying reader cannot observe ctx; Close
// unblocks it when the reader is an io.Closer whose Close interrupts reads
// (an io.Pipe, a socket). os.Stdin's usually does not, which is fine for a
// process that exits after ServeConn returns.
func (c *LineConn) Read(ctx context.Context) ([]byte, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-c.closed:
			return nil, ErrClosed
		default:
		}
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

// readLine reads up to and without the next '\n', never holding more than
// c.max+1 bytes of one line.
func (c *LineConn) readLine() ([]byte, error) {
	var line []byte
	size := 0
	for {
		frag, err := c.r.ReadSlice('\n')
		size += len(frag)
		if size <= c.max+1 { // +1: the '\n' does not count
			line = append(line, frag...)
		} else {
			line = nil
		}
		switch {
		case err == nil:
			if size-1 > c.max {
				return nil, fmt.Errorf("%w: a line of %d bytes exceeds the %d-byte limit and was skipped", ErrMessageTooLarge, size-1, c.max)
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && size > 0:
			if size > c.max {
				return nil, fmt.Errorf("%w: a line of %d bytes exceeds the %d-byte limit and was skipped", ErrMessageTooLarge, size, c.max)
			}
			return line, nil
		default:
			return nil, err
		}
	}
}

// Write writes msg and a newline with one write to the underlying writer.
// It is safe for concurrent use. A write blocked in the underlying writer
// cannot observe ctx; Close unblocks it when the writer's Close does.
func (c *LineConn) Write(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return ErrClosed
	default:
	}
	c.wbuf = append(append(c.wbuf[:0], msg...), '\n')
	_, err := c.w.Write(c.wbuf)
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not keep a large snapshot's buffer for ever
	}
	return err
}

// Close closes the underlying reader and writer when they are io.Closers.
func (c *LineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		for _, cl := range c.closer {
			err = errors.Join(err, cl.Close())
		}
	})
	return err
}

// ErrClosed is returned by LineConn's Read and Write after Close: a local
// close, as opposed to the peer's io.EOF.
var ErrClosed = errors.New("wire: connection closed")
