// Package clustertest runs real `sluice serve` nodes of a cluster (NATS
// and PostgreSQL given by the caller) and WebSocket clients of the host
// protocol that reduce their session's events, for the end-to-end test
// and the load command of cluster mode.
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/protocol"
)

// NodeConfig is what every node of a cluster shares.
type NodeConfig struct {
	Bin      string // the sluice binary
	NATS     string
	Postgres string
	ModelURL string // an Anthropic-shaped model server (fakemodel)
	Home     string // SLUICE_HOME, and the nodes' working directory
	LeaseTTL time.Duration
	// Verbose makes the nodes log at debug level.
	Verbose bool
	// Env is added to the nodes' environment (credentials: NATS_USER,
	// PGPASSWORD, ...) and Args to their command line (--postgres-file).
	// Without Postgres, a node with NATS is given no --postgres.
	Env  []string
	Args []string
}

// Node is one `sluice serve` process.
type Node struct {
	ID  string
	WS  string // the WebSocket URL, with its token
	cmd *exec.Cmd

	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// Start starts node id and returns it once it printed its URL.
func Start(ctx context.Context, cfg NodeConfig, id string) (*Node, error) {
	args := []string{"serve", "--port", "0"}
	if cfg.Verbose {
		args = append(args, "--verbose")
	}
	if cfg.NATS != "" { // else a single process with its sessions in files
		args = append(args, "--nats", cfg.NATS, "--node-id", id)
		if cfg.Postgres != "" {
			args = append(args, "--postgres", cfg.Postgres)
		}
	}
	args = append(args, cfg.Args...)
	if cfg.LeaseTTL > 0 && cfg.NATS != "" {
		args = append(args, "--lease-ttl", cfg.LeaseTTL.String())
	}
	cmd := exec.Command(cfg.Bin, args...)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=clustertest", "ANTHROPIC_AUTH_TOKEN=",
		"ANTHROPIC_BASE_URL="+cfg.ModelURL, "SLUICE_HOME="+cfg.Home, "SLUICE_CONFIG=/nonexistent")
	cmd.Env = append(cmd.Env, cfg.Env...)
	cmd.Dir = cfg.Home
	n := &Node{ID: id, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = lockedWriter{n}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		n.err = cmd.Wait()
		close(n.done)
	}()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		n.Kill()
		return nil, ctx.Err()
	}
	page, err := url.Parse(strings.TrimSpace(line))
	if err != nil || page.Host == "" {
		n.Kill()
		return nil, fmt.Errorf("node %s printed no URL (%q):\n%s", id, line, n.Stderr())
	}
	n.WS = "ws://" + page.Host + "/ws?" + page.RawQuery
	return n, nil
}

type lockedWriter struct{ n *Node }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	return w.n.stderr.Write(p)
}

// PID is the node's process id.
func (n *Node) PID() int { return n.cmd.Process.Pid }

// Stderr is what the node logged.
func (n *Node) Stderr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stderr.String()
}

// Kill kills the node with SIGKILL and waits for it.
func (n *Node) Kill() {
	n.cmd.Process.Kill()
	<-n.done
}

// Signal sends the node sig (SIGSTOP, SIGCONT: a pause past its lease).
func (n *Node) Signal(sig os.Signal) error { return n.cmd.Process.Signal(sig) }

// Stop interrupts the node, waits for it and returns its CPU time (user
// and system) and its exit error.
func (n *Node) Stop() (time.Duration, error) {
	n.cmd.Process.Signal(os.Interrupt)
	<-n.done
	return n.CPU(), n.err
}

// CPU is the CPU time (user and system) of a node that has exited.
func (n *Node) CPU() time.Duration {
	<-n.done
	if ru, ok := n.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return 0
}

// Client is a host of the protocol attached to one session over a
// WebSocket: it applies every event with the shared reducer, which
// refuses a gap or a duplicate, and resumes from its last seq on another
// node when its node goes away.
type Client struct {
	Session string

	mu      sync.Mutex
	list    protocol.List
	err     error // the first inconsistency seen
	owner   string
	resumed int // reconnections that continued from the last seq
	resyncs int // reconnections answered with a snapshot
	events  int64
	bytes   int64
	seen    chan struct{} // capacity 1: an event was applied
	// onEvent, when set, is called for each event applied (with mu held).
	onEvent func(ev protocol.Event, at time.Time)

	conn    *websocket.Conn
	nextID  int
	pending map[int]chan rpcReply
	gone    chan struct{} // closed when conn's reader ends
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// InitResult is the part of initialize's answer the clients use.
type InitResult struct {
	SessionID string             `json:"sessionId"`
	Epoch     string             `json:"epoch"`
	Owner     string             `json:"owner"`
	Seq       int64              `json:"seq"`
	Resumed   bool               `json:"resumed"`
	Snapshot  *protocol.Snapshot `json:"snapshot"`
}

// Attach connects to ws and initializes: a new session when session is
// "", else the given one.
func Attach(ctx context.Context, ws, session string) (*Client, error) {
	c := &Client{Session: session, seen: make(chan struct{}, 1)}
	if err := c.connect(ctx, ws, false); err != nil {
		return nil, err
	}
	return c, nil
}

// OnEvent sets a function called with each event as it is applied, and
// the time its message was read from the socket.
func (c *Client) OnEvent(f func(ev protocol.Event, at time.Time)) {
	c.mu.Lock()
	c.onEvent = f
	c.mu.Unlock()
}

func (c *Client) connect(ctx context.Context, ws string, resume bool) error {
	conn, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		return err
	}
	conn.SetReadLimit(-1)
	c.mu.Lock()
	c.conn, c.pending, c.gone = conn, map[int]chan rpcReply{}, make(chan struct{})
	gone := c.gone
	c.mu.Unlock()
	go c.read(conn, gone)
	params := map[string]any{}
	if c.Session != "" {
		params["sessionId"] = c.Session
	}
	if resume {
		c.mu.Lock()
		params["lastSeq"] = c.list.Seq()
		params["epoch"] = "cluster:" + c.Session
		c.mu.Unlock()
	}
	// The answer is applied by the reader, before any event after it.
	var res InitResult
	if err := c.Call(ctx, "initialize", params, &res); err != nil {
		conn.CloseNow()
		return err
	}
	return nil
}

// read applies what arrives on conn until it ends.
func (c *Client) read(conn *websocket.Conn, gone chan struct{}) {
	defer close(gone)
	for {
		_, data, err := conn.Read(context.Background())
		// The time of delivery: before this client decodes and reduces
		// the message, which is the load generator's work, not the nodes'.
		at := time.Now()
		if err != nil {
			c.mu.Lock()
			for _, ch := range c.pending {
				close(ch)
			}
			c.pending = map[int]chan rpcReply{}
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.bytes += int64(len(data))
		c.mu.Unlock()
		var head struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &head) != nil {
			c.fail(fmt.Errorf("unreadable message %q", data))
			continue
		}
		if head.Method != "" {
			ev, err := protocol.DecodeNotification(data)
			if err != nil {
				c.fail(err)
				continue
			}
			c.apply(ev, at)
			continue
		}
		var r rpcReply
		json.Unmarshal(data, &r)
		if r.Error == nil && len(r.Result) > 0 {
			c.initialized(r.Result)
		}
		c.mu.Lock()
		ch := c.pending[*head.ID]
		delete(c.pending, *head.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// initialized takes an initialize answer's snapshot (an answer without one
// is either another method's or a resumption).
func (c *Client) initialized(raw json.RawMessage) {
	var res InitResult
	if json.Unmarshal(raw, &res) != nil || res.SessionID == "" || res.Epoch == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Session == "" {
		c.Session = res.SessionID
	}
	c.owner = res.Owner
	switch {
	case res.Snapshot != nil:
		if c.list.Seq() > 0 {
			c.resyncs++
		}
		c.list.Reset(*res.Snapshot)
	case res.Resumed:
		c.resumed++
	}
}

func (c *Client) apply(ev protocol.Event, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Head().SessionID != c.Session {
		return
	}
	if err := c.list.Apply(ev); err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("client of %s: %s covering %d..%d: %w", c.Session, ev.Method(), ev.Head().From(), ev.Head().Seq, err)
		}
		return
	}
	c.events += ev.Head().Seq - ev.Head().From() + 1
	if c.onEvent != nil {
		c.onEvent(ev, at)
	}
	select {
	case c.seen <- struct{}{}:
	default:
	}
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// ErrGone means the client's node went away during a call.
var ErrGone = errors.New("clustertest: connection lost")

// Call sends a request and decodes its result into out (when not nil).
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcReply, 1)
	c.pending[id] = ch
	conn := c.conn
	c.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("%w: %v", ErrGone, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return ErrGone
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Gone is closed when the client's connection ends.
func (c *Client) Gone() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// Resume reconnects to ws, continuing from the client's last seq.
func (c *Client) Resume(ctx context.Context, ws string) error {
	c.Close()
	return c.connect(ctx, ws, true)
}

// Close closes the connection.
func (c *Client) Close() {
	c.mu.Lock()
	conn, gone := c.conn, c.gone
	c.mu.Unlock()
	conn.CloseNow()
	<-gone
}

// State is the client's reduced view state and the first inconsistency
// it saw.
func (c *Client) State() (protocol.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list.Snapshot(), c.err
}

// Stats are the client's counts.
func (c *Client) Stats() (events, bytes int64, resumed, resyncs int, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events, c.bytes, c.resumed, c.resyncs, c.owner
}

// WaitIdle waits until the client has seen a run start and end after seq
// `after` (the session is idle at a seq greater than after).
func (c *Client) WaitIdle(ctx context.Context, after int64) error {
	for {
		c.mu.Lock()
		done := c.list.Seq() > after && !c.list.Running()
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-c.seen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitSeq waits until the client holds seq at least min.
func (c *Client) WaitSeq(ctx context.Context, min int64) error {
	for {
		c.mu.Lock()
		done := c.list.Seq() >= min
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-c.seen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Snapshot pulls the session's state from node ws with a connection of
// its own (initialize answers with a snapshot).
func Snapshot(ctx context.Context, ws, session string) (protocol.Snapshot, string, error) {
	conn, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		return protocol.Snapshot{}, "", err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"sessionId": session}})
	if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return protocol.Snapshot{}, "", err
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return protocol.Snapshot{}, "", err
		}
		var r struct {
			ID     *int            `json:"id"`
			Result InitResult      `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &r) != nil || r.ID == nil {
			continue
		}
		if r.Error != nil || r.Result.Snapshot == nil {
			return protocol.Snapshot{}, "", fmt.Errorf("initialize %s: %s", session, data)
		}
		return *r.Result.Snapshot, r.Result.Owner, nil
	}
}
