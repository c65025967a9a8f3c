package rpc

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// handlers run on the connection's reader goroutine, in arrival order. A
// handler whose work takes long (bang, compact) answers from a goroutine
// of its own.
var handlers map[string]func(c *connection, req *Request)

func init() {
	handlers = map[string]func(c *connection, req *Request){
		wire.MethodInitialize:         (*connection).initialize,
		wire.MethodRestoreSession:     (*connection).restoreSession,
		wire.MethodListSessions:       (*connection).listSessions,
		wire.MethodSendMessage:        (*connection).sendMessage,
		wire.MethodAbort:              (*connection).abort,
		wire.MethodGetMessages:        (*connection).getMessages,
		wire.MethodRewind:             (*connection).rewind,
		wire.MethodClear:              (*connection).clear,
		wire.MethodCompact:            (*connection).compact,
		wire.MethodBang:               (*connection).bang,
		wire.MethodSetModel:           (*connection).setModel,
		wire.MethodSetPermissionMode:  (*connection).setPermissionMode,
		wire.MethodPermissionResponse: (*connection).permissionResponse,
		wire.MethodDetach:             (*connection).detachMethod,
		wire.MethodAsk:                (*connection).ask,
	}
}

// describe is the part of an initialize result that does not depend on
// the subscription.
func (s *Server) describe(e *entry) wire.InitializeResult {
	return wire.InitializeResult{
		ProtocolVersion: wire.ProtocolVersion,
		ServerInfo:      wire.Info{Name: "sluice", Version: s.opts.Version},
		Capabilities: wire.Capabilities{
			Methods: wire.Methods, Events: wire.Events, MergedEvents: true, Resume: true,
			RewindReceipts: true, MaxMessageBytes: s.opts.MaxMessageBytes,
		},
		SessionID:        e.sess.ID(),
		Epoch:            e.epoch,
		WorkingDirectory: e.sess.WorkDir(),
		Model:            e.sess.Model(),
		PermissionMode:   e.sess.PermissionMode(),
		Tools:            e.sess.Tools(),
		Owner:            e.sess.Owner(),
	}
}

func absDir(dir string) (string, *wire.Error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "invalid params: workingDirectory: %v", err)
	}
	return abs, nil
}

func checkMode(mode protocol.PermissionMode) *wire.Error {
	if mode == "" {
		return nil
	}
	if _, err := protocol.ParsePermissionMode(string(mode)); err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (c *connection) initialize(req *Request) {
	var p wire.InitializeParams
	if rerr := decodeParams(req.Params, &p); rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	if rerr := checkMode(p.PermissionMode); rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	dir, rerr := absDir(p.WorkingDirectory)
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	if p.ClientInfo != nil {
		c.s.log.Info("host initialized", "client", p.ClientInfo.Name, "version", p.ClientInfo.Version, "protocolVersion", p.ProtocolVersion)
	}
	cfg := SessionConfig{WorkingDirectory: dir, PermissionMode: p.PermissionMode, Model: p.Model}
	var e *entry
	if p.SessionID == "" {
		e, rerr = c.s.newSession(c.ctx, cfg)
	} else {
		e, rerr = c.s.session(c.ctx, p.SessionID, cfg)
		if rerr == nil {
			// Attaching to a running session: the host's choices apply.
			if p.Model != "" {
				if err := e.sess.SetModel(c.ctx, p.Model); err != nil {
					rerr = opError(err)
				}
			}
			if p.PermissionMode != "" && rerr == nil {
				if err := e.sess.SetPermissionMode(c.ctx, protocol.PermissionMode(p.PermissionMode)); err != nil {
					rerr = wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err)
				}
			}
		}
	}
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	c.attach(req, e, p.LastSeq, p.Epoch)
}

func (c *connection) restoreSession(req *Request) {
	var p wire.RestoreSessionParams
	if rerr := decodeParams(req.Params, &p); rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	if p.SessionID == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: sessionId is required"))
		return
	}
	dir, rerr := absDir(p.WorkingDirectory)
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	e, rerr := c.s.session(c.ctx, p.SessionID, SessionConfig{WorkingDirectory: dir})
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	c.attach(req, e, nil, "")
}

func (c *connection) listSessions(req *Request) {
	var p wire.ListSessionsParams
	if rerr := decodeParams(req.Params, &p); rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	dir, rerr := absDir(p.WorkingDirectory)
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	dir, err := c.s.workDir(dir)
	if err != nil {
		c.reply(req, nil, wire.Errorf(wire.CodeRequestFailed, "no working directory: %v", err))
		return
	}
	res := wire.ListSessionsResult{Sessions: []wire.SessionInfo{}}
	seen := map[string]bool{}
	if c.s.opts.Store != nil {
		infos, err := agent.ListSessions(context.Background(), c.s.opts.Store, dir)
		if err != nil {
			c.reply(req, nil, wire.Errorf(wire.CodeRequestFailed, "cannot list sessions: %v", err))
			return
		}
		for _, in := range infos {
			seen[in.ID] = true
			if in.Title == "" {
				// The title is written with the first message: a session
				// without one was opened and never used.
				continue
			}
			info := wire.SessionInfo{
				ID: in.ID, Title: in.Title, FirstLine: firstLine(in.Title), WorkingDirectory: in.WorkDir, Model: in.Model,
				Modified: in.Modified.UnixMilli(), Size: in.Size, Live: c.s.live(in.ID),
			}
			if c.s.opts.Host != nil {
				info.Owner = c.s.opts.Host.Owner(c.ctx, in.ID)
			}
			res.Sessions = append(res.Sessions, info)
		}
	}
	// Running sessions that are not stored (no store) are listed too,
	// once they have a message.
	for _, sess := range c.s.liveSessions() {
		if seen[sess.ID()] || sess.WorkDir() != dir {
			continue
		}
		snap := sess.Messages()
		title, at := "", int64(0)
		for _, m := range snap.Messages {
			if m.Role == protocol.RoleUser {
				title = m.Text()
				break
			}
		}
		if n := len(snap.Messages); n > 0 {
			at = snap.Messages[n-1].CreatedAt
		}
		if title == "" {
			continue
		}
		res.Sessions = append(res.Sessions, wire.SessionInfo{
			ID: sess.ID(), Title: title, FirstLine: firstLine(title), WorkingDirectory: sess.WorkDir(),
			Model: sess.Model(), Modified: at, Live: true, Owner: sess.Owner(),
		})
	}
	c.reply(req, res, nil)
}

// firstLineRunes bounds SessionInfo.FirstLine.
const firstLineRunes = 80

// firstLine is the first line of a title that is not blank, trimmed and
// cut to firstLineRunes: what a list of sessions shows.
func firstLine(title string) string {
	for line := range strings.Lines(title) {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > firstLineRunes {
				line = string(r[:firstLineRunes-1]) + "…"
			}
			return line
		}
	}
	return ""
}

// target decodes params into p (which names a session with sessionId) and
// resolves the attachment, answering the request itself on failure.
func (c *connection) target(req *Request, p any, sessionID func() string) (*attachment, bool) {
	if rerr := decodeParams(req.Params, p); rerr != nil {
		c.reply(req, nil, rerr)
		return nil, false
	}
	a, rerr := c.attachment(sessionID())
	if rerr != nil {
		c.reply(req, nil, rerr)
		return nil, false
	}
	if a.isEnded() {
		c.reply(req, nil, wire.Errorf(wire.CodeSessionClosed, "session %q is closed", a.sess.ID()))
		return nil, false
	}
	return a, true
}

// opError turns an agent error into a response error.
func opError(err error) *wire.Error {
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr
	}
	if errors.Is(err, agent.ErrClosed) {
		return wire.Errorf(wire.CodeSessionClosed, "the session is closed")
	}
	return wire.Errorf(wire.CodeRequestFailed, "%v", err)
}

func (c *connection) sendMessage(req *Request) {
	var p wire.SendMessageParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if p.Text == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: text is required"))
		return
	}
	id, err := a.sess.Submit(c.s.ctx, p.Text, p.Force)
	if err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.reply(req, wire.SendMessageResult{MessageID: id}, nil)
}

func (c *connection) abort(req *Request) {
	var p wire.AbortParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if err := a.sess.Abort(c.s.ctx, p.Reason); err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.reply(req, wire.Empty{}, nil)
}

func (c *connection) getMessages(req *Request) {
	var p wire.SessionParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	a.resync(func(snap protocol.Snapshot) []byte { return c.encodeReply(req, snap, nil) })
}

// rewind runs on the reader goroutine: Rewind aborts the work in progress
// and queues the rewind before the next request is read, so a message sent
// right after it is not dropped by it.
func (c *connection) rewind(req *Request) {
	var p wire.RewindParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if p.MessageID == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: messageId is required"))
		return
	}
	// Refuse before Rewind aborts anything: ok false publishes nothing.
	if reason := rewindable(a.sess.Messages(), p.MessageID); reason != "" {
		c.reply(req, wire.RewindResult{RequestID: p.RequestID, OK: false, Error: reason}, nil)
		return
	}
	seq, err := a.sess.Rewind(c.s.ctx, p.MessageID)
	if err != nil {
		if isClosed(err) {
			c.reply(req, nil, opError(err))
			return
		}
		c.reply(req, wire.RewindResult{RequestID: p.RequestID, OK: false, Error: err.Error()}, nil)
		return
	}
	if p.RequestID == "" {
		a.resyncAfter(seq, func(snap protocol.Snapshot) []byte {
			return c.encodeReply(req, wire.RewindResult{OK: true, Snapshot: &snap}, nil)
		})
		return
	}
	a.respondAfter(seq, c.encodeReply(req, wire.RewindResult{RequestID: p.RequestID, OK: true}, nil))
}

// rewindable says why the list cannot be rewound to id, or "".
func rewindable(snap protocol.Snapshot, id string) string {
	for i := len(snap.Messages) - 1; i >= 0; i-- {
		if snap.Messages[i].ID == id {
			if snap.Messages[i].Role != protocol.RoleUser {
				return agent.ErrNotUserMessage.Error()
			}
			return ""
		}
	}
	return agent.ErrUnknownMessage.Error() + ": " + id
}

func (c *connection) clear(req *Request) {
	var p wire.SessionParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	seq, err := a.sess.Clear(c.s.ctx)
	if err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	a.resyncAfter(seq, func(snap protocol.Snapshot) []byte { return c.encodeReply(req, snap, nil) })
}

func (c *connection) compact(req *Request) {
	var p wire.SessionParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	// Queued now, on the reader, so that it keeps its place among the
	// messages sent before and after it; answered when done.
	h, err := a.sess.SubmitCompact(c.s.ctx)
	if err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.s.goOp(func() {
		res, err := h.Wait(c.s.ctx)
		if err != nil {
			c.reply(req, nil, opError(err))
			return
		}
		a.respondAfter(res.Seq, c.encodeReply(req, wire.Empty{}, nil))
	})
}

func (c *connection) bang(req *Request) {
	var p wire.BangParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if p.Command == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: command is required"))
		return
	}
	h, err := a.sess.SubmitBang(c.s.ctx, p.Command)
	if err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.s.goOp(func() {
		res, err := h.Wait(c.s.ctx)
		if err != nil {
			c.reply(req, nil, opError(err))
			return
		}
		a.respondAfter(res.Seq, c.encodeReply(req, wire.BangResult{MessageID: res.MessageID}, nil))
	})
}

// ask answers a side question (/btw) from the session's context, while a
// run goes on if one does; the answer is the reply, and nothing of it
// reaches the session's events.
func (c *connection) ask(req *Request) {
	var p wire.AskParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if strings.TrimSpace(p.Question) == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: question is required"))
		return
	}
	c.s.goOp(func() {
		answer, err := a.sess.Ask(c.s.ctx, p.Question)
		if err != nil {
			c.reply(req, nil, opError(err))
			return
		}
		c.reply(req, wire.AskResult{Answer: answer}, nil)
	})
}

func (c *connection) setModel(req *Request) {
	var p wire.SetModelParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if err := a.sess.SetModel(c.s.ctx, p.Model); err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.reply(req, wire.Empty{}, nil)
}

func (c *connection) setPermissionMode(req *Request) {
	var p wire.SetPermissionModeParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	if p.PermissionMode == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: permissionMode is required"))
		return
	}
	if err := a.sess.SetPermissionMode(c.s.ctx, p.PermissionMode); err != nil {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err))
		return
	}
	c.reply(req, wire.Empty{}, nil)
}

func (c *connection) permissionResponse(req *Request) {
	var p wire.PermissionResponseParams
	a, ok := c.target(req, &p, func() string { return p.SessionID })
	if !ok {
		return
	}
	switch p.Decision {
	case protocol.DecisionAllow, protocol.DecisionAllowAlways, protocol.DecisionDeny:
	default:
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: decision must be %q, %q or %q",
			protocol.DecisionAllow, protocol.DecisionAllowAlways, protocol.DecisionDeny))
		return
	}
	if p.RequestID == "" {
		c.reply(req, nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: requestId is required"))
		return
	}
	if err := a.sess.AnswerPermission(c.s.ctx, p.RequestID, p.Decision); err != nil {
		c.reply(req, nil, opError(err))
		return
	}
	c.reply(req, wire.Empty{}, nil)
}

func (c *connection) detachMethod(req *Request) {
	var p wire.SessionParams
	if rerr := decodeParams(req.Params, &p); rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	a, rerr := c.attachment(p.SessionID)
	if rerr != nil {
		c.reply(req, nil, rerr)
		return
	}
	c.detach(a.sess.ID())
	c.reply(req, wire.Empty{}, nil)
}
