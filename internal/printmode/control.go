package printmode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/protocol"
)

// The control protocol of Claude Code's stream-json: control_request lines
// in both directions, each answered by a control_response that names its
// request_id. The host (the Agent SDK, a chat bridge) asks sluice to
// initialize, interrupt, change the mode or the model, and so on; sluice
// asks the host whether a tool may run (can_use_tool), to run the hooks it
// registered (hook_callback) and to reach its in-process MCP servers
// (mcp_message).

// incoming is one control line from the host, as read.
type incoming struct {
	Type string `json:"type"`
	// RequestID is the host's id as it came, a string or a number: the
	// answer names it the same way.
	RequestID json.RawMessage `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string          `json:"subtype"`
		RequestID json.RawMessage `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

// ErrHostError is wrapped by the error of an outgoing request the host
// answered with an error.
var ErrHostError = errors.New("the host answered with an error")

// outbox sends control requests to the host and matches its answers.
type outbox struct {
	w    *cclines.Writer
	next atomic.Int64

	mu      sync.Mutex
	waiting map[string]chan incoming
	closed  bool
}

func newOutbox(w *cclines.Writer) *outbox {
	return &outbox{w: w, waiting: map[string]chan incoming{}}
}

// ask sends request and waits for the host's answer. It fails when ctx is
// done or the host's input ended first.
func (o *outbox) ask(ctx context.Context, request any) (json.RawMessage, error) {
	id := "sluice-" + strconv.FormatInt(o.next.Add(1), 10)
	ch := make(chan incoming, 1)
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, errors.New("the host's input has ended")
	}
	o.waiting[id] = ch
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		delete(o.waiting, id)
		o.mu.Unlock()
	}()
	o.w.Line(streamjson.ControlRequestLine{Type: "control_request", RequestID: id, Request: request})
	o.w.Flush()
	select {
	case in, ok := <-ch:
		if !ok {
			return nil, errors.New("the host's input ended before it answered")
		}
		if in.Response.Subtype == "error" {
			return nil, fmt.Errorf("%w: %s", ErrHostError, in.Response.Error)
		}
		return in.Response.Response, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// deliver hands the host's answer to the request waiting for it; it
// reports false for an answer to nothing.
func (o *outbox) deliver(in incoming) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := idString(in.Response.RequestID)
	ch, ok := o.waiting[id]
	if ok {
		delete(o.waiting, id)
		ch <- in
	}
	return ok
}

// close fails the requests still waiting: the host will not answer.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for id, ch := range o.waiting {
		close(ch)
		delete(o.waiting, id)
	}
}

// respond writes the answer to a host's request.
func respond(w *cclines.Writer, id json.RawMessage, response any, err error) {
	r := streamjson.ControlResponse{Subtype: "success", RequestID: id, Response: response}
	if err != nil {
		r = streamjson.ControlResponse{Subtype: "error", RequestID: id, Error: err.Error()}
	} else if r.Response == nil {
		r.Response = struct{}{}
	}
	w.Line(streamjson.ControlResponseLine{Type: "control_response", Response: r})
	w.Flush()
}

// requestHeader is what every host request has.
type requestHeader struct {
	Subtype string `json:"subtype"`
}

// hostModes are the permission modes a host may set, mapped to sluice's:
// dontAsk is default with nobody asked (print mode denies what would ask),
// auto is Claude Code's classifier mode, which sluice runs as default.
func sessionMode(mode string) (protocol.PermissionMode, error) {
	switch mode {
	case "dontAsk", "auto":
		return protocol.ModeDefault, nil
	}
	return protocol.ParsePermissionMode(mode)
}
