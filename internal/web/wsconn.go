package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// wsConn is an wire.Conn over a WebSocket: one JSON-RPC message per
// WebSocket text message. Outgoing messages go through the connection's
// outbox (the window-concat coalescer); a goroutine started by serveWS
// sends them.
type wsConn struct {
	c            *websocket.Conn
	out          *outbox
	max          int
	writeTimeout time.Duration

	closeOnce sync.Once
}

var _ wire.Conn = (*wsConn)(nil)

// Read returns the next message. A message over the limit is read to its
// end and dropped, and Read reports wire.ErrMessageTooLarge: the connection
// stays usable, as the wire.Conn contract asks. A close by the peer is
// io.EOF.
func (w *wsConn) Read(ctx context.Context) ([]byte, error) {
	_, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
			return nil, io.EOF
		}
		return nil, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(w.max)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(w.max) {
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: a message of %d bytes exceeds the %d-byte limit and was skipped", wire.ErrMessageTooLarge, n+rest, w.max)
	}
	return buf.Bytes(), nil
}

// Write queues msg for sending. The server may reuse msg's array after
// Write returns, so the outbox keeps a copy.
func (w *wsConn) Write(ctx context.Context, msg []byte) error {
	return w.out.Write(ctx, bytes.Clone(msg))
}

// WriteEvent queues msg, the notification of ev (rpc.EventWriter): the
// server hands msg over, so it is kept without a copy, and the outbox takes
// ev as it is instead of decoding msg.
func (w *wsConn) WriteEvent(ctx context.Context, msg []byte, ev protocol.Event) error {
	return w.out.WriteEvent(ctx, msg, ev)
}

// send writes one message on the socket, bounded by the write timeout so
// that a peer that stops reading is eventually dropped.
func (w *wsConn) send(ctx context.Context, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, w.writeTimeout)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// Close stops the outbox and closes the socket without waiting for the
// peer's close frame.
func (w *wsConn) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.out.close()
		err = w.c.CloseNow()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}
