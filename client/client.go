// Package client is the host side of sluice's host protocol (docs/protocol.md):
// a Go program that drives `sluice rpc` (or any server of the protocol)
// spawns or connects to it, sends requests, and keeps each session's
// message list with the shared reducer (protocol.List).
//
//	c, err := client.Start(ctx, exec.Command("sluice", "rpc"), client.Options{})
//	sess, err := c.Initialize(ctx, wire.InitializeParams{WorkingDirectory: dir})
//	id, err := sess.Send(ctx, "Explain this repository", false)
//	for {
//		u, err := sess.Next(ctx) // every change, in order
//		...
//	}
//	snap := sess.Messages() // the host's list, equal to getMessages
//
// The list is replaced by a snapshot on initialize, restore, clear and
// resync; events whose seq is not newer than the list's are dropped; a gap
// in seq or an event that does not fit makes the session pull a snapshot
// (getMessages) and carry on from it, so the list heals itself. The list is
// cut by a rewind only when the messagesRewound event arrives; Rewind's
// receipt reports the outcome.
//
// A Coalescer batches updates in time windows for hosts that forward them
// to a UI.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// Errors of the client.
var (
	// ErrClosed: the client was closed or its connection ended.
	ErrClosed = errors.New("client: connection closed")
	// ErrStaleReceipt: a rewind's receipt did not match the rewind in
	// flight (a newer rewind superseded it, or the server answered another
	// request id). The caller should not act on it.
	ErrStaleReceipt = errors.New("client: rewind receipt does not match the request in flight; ignored")
)

// DefaultMaxMessageBytes bounds one message from the server on a spawned
// connection (snapshots of long sessions are large).
const DefaultMaxMessageBytes = 256 << 20

// Options configure a client.
type Options struct {
	// Logger receives diagnostics (default: discarded).
	Logger *slog.Logger
	// MaxMessageBytes bounds one message read from a spawned server
	// (default DefaultMaxMessageBytes).
	MaxMessageBytes int
}

// Client is a connection to a host-protocol server. Its methods are safe
// for concurrent use.
type Client struct {
	conn wire.Conn
	log  *slog.Logger
	cmd  *exec.Cmd
	// stdin is the spawned server's standard input, closed first by Close
	// so that the server shuts down cleanly.
	stdin io.Closer

	wmu sync.Mutex // serialises writes

	mu       sync.Mutex
	nextID   int64
	pending  map[string]*call
	sessions map[string]*Session
	err      error // why the connection ended
	done     chan struct{}
}

// call is a request waiting for its response. hook, when set, runs on the
// reader goroutine at the response's place in the stream, before the
// notifications that follow it are handled.
type call struct {
	hook  func(result json.RawMessage) error
	reply chan response
}

type response struct {
	result json.RawMessage
	err    error
}

// New returns a client on conn and starts reading it.
func New(conn wire.Conn, opts Options) *Client {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{conn: conn, log: log, pending: map[string]*call{}, sessions: map[string]*Session{}, done: make(chan struct{})}
	go c.read()
	return c
}

// Start starts cmd (for example exec.Command("sluice", "rpc")) with its
// stdin and stdout as the connection. Its stderr is left as cmd has it (nil
// discards the server's log). Close ends it cleanly; if ctx ends first, the
// process is killed.
func Start(ctx context.Context, cmd *exec.Cmd, opts Options) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("client: start %s: %w", cmd.Path, err)
	}
	max := opts.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	c := New(wire.NewLineConn(stdout, stdin, max), opts)
	c.cmd, c.stdin = cmd, stdin
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Kill()
		case <-c.done:
		}
	}()
	return c, nil
}

// Close ends the connection. For a spawned server it closes the server's
// stdin, which makes it close its sessions (flushing them to disk) and
// exit, and waits for that; it returns the server's exit error, if any.
func (c *Client) Close() error {
	if c.cmd != nil {
		c.stdin.Close()
		<-c.done // stdout reaches EOF when the server exits
		err := c.cmd.Wait()
		c.conn.Close()
		return err
	}
	c.conn.Close()
	<-c.done
	return nil
}

// Done is closed when the connection has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is up; ErrClosed wrapped
// around io.EOF after a clean end).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a request and decodes its result into result (which may be
// nil). A JSON-RPC error is returned as *wire.Error. If ctx is done first, Call
// returns ctx's error; the response, when it comes, is still processed.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.call(ctx, method, params, nil)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("client: decode %s result: %w", method, err)
		}
	}
	return nil
}

func (c *Client) call(ctx context.Context, method string, params any, hook func(json.RawMessage) error) (json.RawMessage, error) {
	cl := &call{hook: hook, reply: make(chan response, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[strconv.FormatInt(id, 10)] = cl
	c.mu.Unlock()

	req := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", id, method, params}
	data, err := json.Marshal(req)
	if err != nil {
		c.forget(id)
		return nil, fmt.Errorf("client: encode %s: %w", method, err)
	}
	if err := c.write(ctx, data); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case r := <-cl.reply:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, strconv.FormatInt(id, 10))
	c.mu.Unlock()
}

func (c *Client) write(ctx context.Context, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.conn.Write(ctx, data); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return nil
}

// incoming is any message from the server.
type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

// read is the reader goroutine: it runs response hooks and applies
// notifications in the order the server wrote them.
func (c *Client) read() {
	var err error
	for {
		var data []byte
		data, err = c.conn.Read(context.Background())
		if errors.Is(err, wire.ErrMessageTooLarge) {
			// A lost notification shows as a gap and heals; a lost
			// response leaves its caller to its context.
			c.log.Warn("skipped a message from the server", "err", err)
			continue
		}
		if err != nil {
			break
		}
		var m incoming
		if jerr := json.Unmarshal(data, &m); jerr != nil {
			c.log.Warn("skipped a message that is not JSON", "err", jerr)
			continue
		}
		if m.Method != "" {
			c.notification(m)
			continue
		}
		c.response(m)
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %w", ErrClosed, err)
	pending := c.pending
	c.pending = map[string]*call{}
	sessions := c.sessions
	c.mu.Unlock()
	for _, cl := range pending {
		cl.reply <- response{err: c.err}
	}
	for _, s := range sessions {
		s.closeUpdates()
	}
	close(c.done)
}

func (c *Client) response(m incoming) {
	key := string(m.ID)
	c.mu.Lock()
	cl, ok := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if !ok {
		c.log.Warn("response to no request in flight", "id", key)
		return
	}
	if m.Error != nil {
		cl.reply <- response{err: m.Error}
		return
	}
	var err error
	if cl.hook != nil {
		err = cl.hook(m.Result)
	}
	cl.reply <- response{result: m.Result, err: err}
}

func (c *Client) notification(m incoming) {
	ev, err := protocol.Decode(m.Method, m.Params)
	if err != nil {
		c.log.Warn("skipped a notification", "method", m.Method, "err", err)
		return
	}
	c.mu.Lock()
	s := c.sessions[ev.Head().SessionID]
	c.mu.Unlock()
	if s == nil {
		return // a session this client detached from
	}
	s.apply(ev)
}

// Initialize starts a session (or, with p.SessionID, attaches to a running
// or stored one) and returns it with its list loaded.
func (c *Client) Initialize(ctx context.Context, p wire.InitializeParams) (*Session, error) {
	return c.attach(ctx, wire.MethodInitialize, p, nil)
}

// Resume re-attaches to a session the host followed before (on another
// connection to the same server), receiving exactly the events after
// list's seq when the server still has them, or a snapshot otherwise.
func (c *Client) Resume(ctx context.Context, sessionID, epoch string, list protocol.Snapshot) (*Session, error) {
	seq := list.Seq
	return c.attach(ctx, wire.MethodInitialize, wire.InitializeParams{SessionID: sessionID, Epoch: epoch, LastSeq: &seq}, &list)
}

// RestoreSession attaches to a stored (or running) session, restoring it
// from the server's store in workDir's project ("" for the server's).
func (c *Client) RestoreSession(ctx context.Context, sessionID, workDir string) (*Session, error) {
	return c.attach(ctx, wire.MethodRestoreSession, wire.RestoreSessionParams{SessionID: sessionID, WorkingDirectory: workDir}, nil)
}

func (c *Client) attach(ctx context.Context, method string, params any, base *protocol.Snapshot) (*Session, error) {
	var sess *Session
	hook := func(raw json.RawMessage) error {
		var res wire.InitializeResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("client: decode %s result: %w", method, err)
		}
		var snap protocol.Snapshot
		switch {
		case res.Snapshot != nil:
			snap = *res.Snapshot
		case base != nil && res.Resumed && res.Seq == base.Seq:
			snap = *base
		default:
			return fmt.Errorf("client: %s resumed at seq %d without a list to resume", method, res.Seq)
		}
		c.mu.Lock()
		s := c.sessions[res.SessionID]
		if s == nil {
			s = newSession(c, res.SessionID)
			c.sessions[res.SessionID] = s
		}
		c.mu.Unlock()
		s.setInfo(res)
		s.reset(snap, res.Snapshot != nil)
		sess = s
		return nil
	}
	if _, err := c.call(ctx, method, params, hook); err != nil {
		return nil, err
	}
	return sess, nil
}

// ListSessions lists the stored and running sessions of workDir's project
// ("" for the server's working directory) that have a message, newest
// first, each with its title and the title's first line.
func (c *Client) ListSessions(ctx context.Context, workDir string) ([]wire.SessionInfo, error) {
	var res wire.ListSessionsResult
	if err := c.Call(ctx, wire.MethodListSessions, wire.ListSessionsParams{WorkingDirectory: workDir}, &res); err != nil {
		return nil, err
	}
	return res.Sessions, nil
}
