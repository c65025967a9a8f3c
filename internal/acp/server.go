package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/mcp"
	sluicesession "github.com/sluicehq/sluice/session"
)

// Options configure a Server.
type Options struct {
	// Agent is the template of every session's options: provider, model,
	// permission mode, store, limits. WorkDir is replaced by the client's
	// cwd, and the client's MCP servers' tools are added to ExtraTools.
	Agent agent.Options
	// Models are the model names offered for selection (the current one is
	// always offered).
	Models []string
	// Version is sluice's version, reported in initialize.
	Version string
	// ListPageSize is how many sessions a session/list page holds (0:
	// DefaultListPageSize).
	ListPageSize int
	// MaxLineBytes bounds an incoming message (0: DefaultMaxLineBytes).
	MaxLineBytes int
	// Logger receives diagnostics (default: discarded). Never stdout.
	Logger *slog.Logger
	// Hooks, when set, gives a session in cwd its hooks (the user's
	// command hooks of that project), replacing Agent.Hooks.
	Hooks func(cwd string) (agent.Hooks, error)
}

// authMethodEnv is the one authentication method: the provider's API key
// from sluice's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, or a
// settings file), set before the client starts sluice acp.
const authMethodEnv = "env-api-key"

// errUnknownSession is the JSON-RPC error for a session id this agent does
// not hold (ACP's "resource not found").
func errUnknownSession(id sdk.SessionId) error {
	return &sdk.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"sessionId": string(id), "error": "unknown session"}}
}

func invalidParams(format string, args ...any) error {
	return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(format, args...)})
}

// Server is one ACP connection's agent: it holds the connection's sessions.
type Server struct {
	opts Options
	log  *slog.Logger
	conn *sdk.AgentSideConnection
	ctx  context.Context // the connection's life

	mu       sync.Mutex
	caps     sdk.ClientCapabilities
	sessions map[sdk.SessionId]*session
	closed   bool
}

// errClosing answers requests that arrive while the connection ends.
var errClosing = sdk.NewInternalError(map[string]any{"error": "the agent is shutting down"})

// closing reports whether the connection is ending: no new work starts.
func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Serve runs an ACP agent on in/out until in ends or ctx is done, then
// closes the sessions (their files flushed) and the MCP servers they
// started. Only JSON-RPC messages are written to out.
func Serve(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Server{opts: opts, log: opts.Logger, ctx: ctx, sessions: map[sdk.SessionId]*session{}}
	// The SDK's messages and the filter's own error answers share out; only
	// the SDK's answers are counted against the requests passed to it.
	answers := newTally()
	var outMu sync.Mutex
	w := &lockedWriter{mu: &outMu, w: out, tally: answers}
	filterErrs := &lockedWriter{mu: &outMu, w: out}
	pr, pw := io.Pipe()
	filtered := make(chan error, 1)
	go func() {
		err := filterLines(in, pw, filterErrs, opts.MaxLineBytes, answers, s.sawRequest)
		pw.CloseWithError(err)
		filtered <- err
	}()
	s.conn = sdk.NewAgentSideConnection(s, w, pr)
	s.conn.SetLogger(opts.Logger)
	var err error
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	pr.Close() // ends the filter's writes when ctx ended first
	closeErr := s.closeAll()
	// The requests still running end promptly now (their sessions are
	// closed, their contexts done); their answers go out first.
	answers.wait()
	select {
	case ferr := <-filtered:
		if err == nil && ferr != nil && !errors.Is(ferr, io.ErrClosedPipe) {
			err = ferr
		}
	default:
		// in has not ended (ctx was cancelled): its reader goroutine ends
		// with the process's stdin.
	}
	return errors.Join(err, closeErr)
}

func (s *Server) closeAll() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.sessions = map[sdk.SessionId]*session{}
	s.mu.Unlock()
	var errs []error
	for _, ss := range all {
		errs = append(errs, ss.close())
	}
	return errors.Join(errs...)
}

func (s *Server) session(id sdk.SessionId) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[id]; ok {
		return ss, nil
	}
	return nil, errUnknownSession(id)
}

func (s *Server) clientCaps() sdk.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// Initialize implements sdk.Agent.
func (s *Server) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.caps = p.ClientCapabilities
	s.mu.Unlock()
	desc := "sluice reads the model provider's API key from its environment (ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY) or its settings file; set it where the client starts sluice acp."
	return sdk.InitializeResponse{
		// Version 1 is the only one: a client asking for another gets the
		// one this agent speaks and decides.
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true, Image: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
			},
		},
		AgentInfo: &sdk.Implementation{Name: "sluice", Title: sdk.Ptr("sluice"), Version: s.opts.Version},
		AuthMethods: []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{
			Id: authMethodEnv, Name: "API key from the environment", Description: &desc,
		}}},
	}, nil
}

// Authenticate implements sdk.Agent: the key is already in the
// environment, so the one method succeeds and any other is refused.
func (s *Server) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if p.MethodId != authMethodEnv {
		return sdk.AuthenticateResponse{}, invalidParams("unknown authentication method %q (want %q)", p.MethodId, authMethodEnv)
	}
	return sdk.AuthenticateResponse{}, nil
}

// checkCwd checks a client's working directory: ACP requires it absolute.
func checkCwd(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", invalidParams("cwd must be an absolute path, got %q", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return "", invalidParams("cwd %s is not a directory", cwd)
	}
	return filepath.Clean(cwd), nil
}

// sessionOptions are the agent options for a session in cwd with the
// client's MCP servers started.
func (s *Server) sessionOptions(ctx context.Context, cwd string, dirs []string, servers []sdk.McpServer, ref *sessionRef) (agent.Options, *mcp.Servers, error) {
	opts := s.opts.Agent
	opts.WorkDir = cwd
	if s.opts.Hooks != nil {
		h, err := s.opts.Hooks(cwd)
		if err != nil {
			return opts, nil, err
		}
		opts.Hooks = h
	}
	opts.AllowedDirs = append(slices.Clone(opts.AllowedDirs), dirs...)
	opts.ExtraTools = slices.Clone(opts.ExtraTools)
	cfg, err := mcpConfig(servers)
	if err != nil {
		return opts, nil, err
	}
	var ms *mcp.Servers
	if cfg != nil {
		ms, err = mcp.Connect(ctx, cfg, &mcp.Options{Dir: cwd, Version: s.opts.Version, ChildEnv: opts.ChildEnv})
		if err != nil {
			// The servers that started still serve; the others are the
			// client's to fix, and the session goes on without them.
			s.log.Warn("client MCP servers", "err", err)
		}
		opts.ExtraTools = append(opts.ExtraTools, ms.Tools()...)
	}
	if opts.Tools == nil {
		// A program's own tool set is kept as given.
		opts.Tools = s.clientTools(cwd, ref)
	}
	return opts, ms, nil
}

// mcpConfig turns the client's mcpServers into sluice's MCP config (nil
// when there are none).
func mcpConfig(servers []sdk.McpServer) (*mcp.Config, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	cfg := &mcp.Config{Servers: map[string]mcp.ServerConfig{}}
	headers := func(hs []sdk.HttpHeader) map[string]string {
		m := map[string]string{}
		for _, h := range hs {
			m[h.Name] = h.Value
		}
		return m
	}
	for _, srv := range servers {
		var name string
		var sc mcp.ServerConfig
		switch {
		case srv.Stdio != nil:
			name = srv.Stdio.Name
			sc = mcp.ServerConfig{Type: mcp.TypeStdio, Command: srv.Stdio.Command, Args: srv.Stdio.Args, Env: map[string]string{}}
			for _, e := range srv.Stdio.Env {
				sc.Env[e.Name] = e.Value
			}
		case srv.Http != nil:
			name = srv.Http.Name
			sc = mcp.ServerConfig{Type: mcp.TypeHTTP, URL: srv.Http.Url, Headers: headers(srv.Http.Headers)}
		case srv.Sse != nil:
			name = srv.Sse.Name
			sc = mcp.ServerConfig{Type: mcp.TypeSSE, URL: srv.Sse.Url, Headers: headers(srv.Sse.Headers)}
		default:
			return nil, invalidParams("unsupported MCP server transport")
		}
		if name == "" {
			return nil, invalidParams("an MCP server needs a name")
		}
		if _, dup := cfg.Servers[name]; dup {
			return nil, invalidParams("two MCP servers are named %q", name)
		}
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

// NewSession implements sdk.Agent.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if s.closing() {
		return sdk.NewSessionResponse{}, errClosing
	}
	cwd, err := checkCwd(p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	ref := &sessionRef{}
	opts, ms, err := s.sessionOptions(ctx, cwd, p.AdditionalDirectories, p.McpServers, ref)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	ag, err := agent.New(opts)
	if err != nil {
		closeMCP(ms)
		return sdk.NewSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	ss, err := s.attach(sluicesession.Local(ag), ms, ref, false)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{
		SessionId: sdk.SessionId(ag.ID()), Modes: ss.modes(), ConfigOptions: ss.configOptions(), Models: ss.models(),
	}, nil
}

func closeMCP(ms *mcp.Servers) {
	if ms != nil {
		ms.Close()
	}
}

// open opens a stored session (load and resume), replacing this
// connection's copy if it holds one already.
func (s *Server) open(ctx context.Context, id sdk.SessionId, cwd string, dirs []string, servers []sdk.McpServer, replay bool) (*session, error) {
	cwd, err := checkCwd(cwd)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	old := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if old != nil {
		if err := old.close(); err != nil {
			s.log.Warn("closing the session before reopening it", "session", id, "err", err)
		}
	}
	ref := &sessionRef{}
	opts, ms, err := s.sessionOptions(ctx, cwd, dirs, servers, ref)
	if err != nil {
		return nil, err
	}
	ag, err := agent.Open(opts, string(id))
	if err != nil {
		closeMCP(ms)
		if errors.Is(err, os.ErrNotExist) {
			return nil, errUnknownSession(id)
		}
		return nil, invalidParams("cannot open session %s: %v", id, err)
	}
	return s.attach(sluicesession.Local(ag), ms, ref, replay)
}

// LoadSession implements sdk.AgentLoader: the stored conversation is
// replayed as session/update notifications before the answer.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if s.closing() {
		return sdk.LoadSessionResponse{}, errClosing
	}
	ss, err := s.open(ctx, p.SessionId, p.Cwd, p.AdditionalDirectories, p.McpServers, true)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if err := ss.waitSent(ctx, ss.replayed); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	return sdk.LoadSessionResponse{Modes: ss.modes(), ConfigOptions: ss.configOptions(), Models: ss.models()}, nil
}

// ResumeSession implements sdk.Agent: like load, without the replay.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	if s.closing() {
		return sdk.ResumeSessionResponse{}, errClosing
	}
	ss, err := s.open(ctx, p.SessionId, p.Cwd, p.AdditionalDirectories, p.McpServers, false)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	return sdk.ResumeSessionResponse{Modes: ss.modes(), ConfigOptions: ss.configOptions(), Models: ss.models()}, nil
}

// ListSessions implements sdk.Agent: the stored sessions of cwd (the
// default working directory when none is given), newest first, in pages of
// Options.ListPageSize; nextCursor names the page after.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	if s.opts.Agent.Store == nil {
		return sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}, nil
	}
	cwd := s.opts.Agent.WorkDir
	if p.Cwd != nil {
		var err error
		if cwd, err = checkCwd(*p.Cwd); err != nil {
			return sdk.ListSessionsResponse{}, err
		}
	}
	var after *listCursor
	if p.Cursor != nil {
		c, ok := parseCursor(*p.Cursor)
		if !ok {
			return sdk.ListSessionsResponse{}, invalidParams("invalid cursor %q: pass a nextCursor of an earlier answer", *p.Cursor)
		}
		after = &c
	}
	infos, err := agent.ListSessions(ctx, s.opts.Agent.Store, cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	size := s.opts.ListPageSize
	if size <= 0 {
		size = DefaultListPageSize
	}
	infos, next := page(infos, after, size)
	out := sdk.ListSessionsResponse{Sessions: make([]sdk.SessionInfo, 0, len(infos))}
	if next != nil {
		out.NextCursor = sdk.Ptr(next.encode())
	}
	for _, in := range infos {
		si := sdk.SessionInfo{SessionId: sdk.SessionId(in.ID), Cwd: in.WorkDir, UpdatedAt: sdk.Ptr(in.Modified.UTC().Format(time.RFC3339))}
		if in.Title != "" {
			si.Title = sdk.Ptr(in.Title)
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, nil
}

// CloseSession implements sdk.Agent.
func (s *Server) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	s.mu.Lock()
	ss, ok := s.sessions[p.SessionId]
	delete(s.sessions, p.SessionId)
	s.mu.Unlock()
	if !ok {
		return sdk.CloseSessionResponse{}, errUnknownSession(p.SessionId)
	}
	if err := ss.close(); err != nil {
		return sdk.CloseSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	return sdk.CloseSessionResponse{}, nil
}

// Cancel implements sdk.Agent: the prompt in progress ends with
// stopReason cancelled, keeping what streamed; running tools are stopped.
func (s *Server) Cancel(_ context.Context, p sdk.CancelNotification) error {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return err
	}
	ss.cancel()
	return nil
}

// Prompt implements sdk.Agent.
func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	if s.closing() {
		return sdk.PromptResponse{}, errClosing
	}
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, images, err := promptText(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return ss.prompt(ctx, text, images)
}

// sawRequest notes, before the SDK reads it, a prompt that is a side
// question (/btw): the SDK cancels the request of the prompt in progress
// when any newer prompt for the session arrives, and the prompt in
// progress must then know that this one does not supersede it.
func (s *Server) sawRequest(msg []byte) {
	if !bytes.Contains(msg, []byte(`"session/prompt"`)) || !bytes.Contains(msg, []byte("/btw")) {
		return
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			SessionID sdk.SessionId `json:"sessionId"`
			Prompt    []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"prompt"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.Method != string(sdk.AgentMethodSessionPrompt) || len(req.Params.Prompt) != 1 || req.Params.Prompt[0].Type != "text" {
		return
	}
	if _, ok := btwQuestion(req.Params.Prompt[0].Text); !ok {
		return
	}
	if ss, err := s.session(req.Params.SessionID); err == nil {
		ss.mu.Lock()
		ss.btwArrived++
		ss.mu.Unlock()
	}
}

// SetSessionMode implements sdk.Agent: sluice's permission modes are the
// session modes.
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := ss.setMode(ctx, string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption implements sdk.Agent: the model and the mode.
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("sluice's options take a value id")
	}
	ss, err := s.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	switch v.ConfigId {
	case configModel:
		if err := ss.ag.SetModel(ctx, string(v.Value)); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
	case configMode:
		if err := ss.setMode(ctx, string(v.Value)); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
	default:
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("unknown config option %q", v.ConfigId)
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: ss.configOptions()}, nil
}

// UnstableSetSessionModel serves session/set_model, the older way clients
// (Zed among them) pick a model.
func (s *Server) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	if strings.TrimSpace(string(p.ModelId)) == "" {
		return sdk.UnstableSetSessionModelResponse{}, invalidParams("modelId is empty")
	}
	if err := ss.ag.SetModel(ctx, string(p.ModelId)); err != nil {
		return sdk.UnstableSetSessionModelResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	return sdk.UnstableSetSessionModelResponse{}, nil
}

// promptText turns a prompt's content into the user message: text as it
// is, a resource link as a mention of its URI, an embedded text resource
// as its content in a block naming its URI, images (inline data) as the
// message's images. Audio is refused: no model API sluice speaks takes it.
func promptText(blocks []sdk.ContentBlock) (string, []agent.Image, error) {
	var sb strings.Builder
	var images []agent.Image
	sep := func() {
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			sep()
			sb.WriteString(b.Text.Text)
		case b.ResourceLink != nil:
			sep()
			fmt.Fprintf(&sb, "@%s", uriPath(b.ResourceLink.Uri))
		case b.Resource != nil:
			r := b.Resource.Resource
			if r.TextResourceContents == nil {
				return "", nil, invalidParams("only text resources can be embedded")
			}
			sep()
			fmt.Fprintf(&sb, "<context ref=%q>\n%s\n</context>", r.TextResourceContents.Uri, r.TextResourceContents.Text)
		case b.Image != nil:
			data, err := base64.StdEncoding.DecodeString(b.Image.Data)
			if err != nil || len(data) == 0 {
				return "", nil, invalidParams("an image needs its data inline, in base64")
			}
			images = append(images, agent.Image{MediaType: b.Image.MimeType, Data: data})
		case b.Audio != nil:
			return "", nil, invalidParams("sluice takes text and images: audio is not supported")
		default:
			return "", nil, invalidParams("unknown content block")
		}
	}
	if strings.TrimSpace(sb.String()) == "" && len(images) == 0 {
		return "", nil, invalidParams("the prompt is empty")
	}
	return sb.String(), images, nil
}

// uriPath shows a file:// URI as its path.
func uriPath(uri string) string {
	if p, ok := strings.CutPrefix(uri, "file://"); ok {
		return p
	}
	return uri
}
