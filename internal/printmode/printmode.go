// Package printmode is sluice's headless print mode (sluice -p): one prompt
// (or a stream of them) in, the answer out as text, one JSON result, or
// stream-json lines in the shapes Claude Code emits, so that programs that
// drive Claude Code headlessly can drive sluice. Package cclines writes
// the lines; this one reads the input, speaks Claude Code's control
// protocol with the host, and runs the turns.
package printmode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// Output formats.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
)

// Config says how print mode reads and writes.
type Config struct {
	OutputFormat string // text (default), json, stream-json
	InputFormat  string // text (default) or stream-json
	// IncludePartial adds stream_event lines (stream-json only).
	IncludePartial bool
	// Model and PermissionMode are reported in system/init.
	Model          string
	PermissionMode string
	// APIKeySource names where the key came from ("ANTHROPIC_API_KEY",
	// "none"), never the key.
	APIKeySource string
	Version      string
	// MCPServers are the configured MCP servers (system/init's
	// mcp_servers).
	MCPServers []streamjson.MCPServer
	// SDKMCPServers are the servers --mcp-config gives as "type": "sdk":
	// the host's in-process servers, reached through mcp_message as those
	// its initialize names (the Agent SDK names them in both places).
	SDKMCPServers []string
	// MCPStatus, when set, reports the MCP servers instead of MCPServers
	// (servers the host's initialize adds start after Run begins).
	MCPStatus func() []streamjson.MCPServer
	// AddDirs are the directories besides the working directory that the
	// tools may use (system/init's additional_directories).
	AddDirs []string
	// MaxRetries is the model stream's retry bound, as
	// model.StreamOptions.MaxRetries says it (0: the default), for the
	// api_retry lines.
	MaxRetries int
	// BackgroundWait bounds how long a one-prompt run waits for the
	// background commands it started before it stops them and says so
	// (0: DefaultBackgroundWait; negative: stop them at once). A
	// stream-json session keeps them across its turns.
	BackgroundWait time.Duration
	// Open opens the session when Run is given none: at once for a text
	// prompt; with stream-json input, after the host's initialize (which
	// may shape the session) or at the first message without one.
	Open OpenFunc
	// PermissionPromptStdio asks the host with can_use_tool control
	// requests about the calls that need approval
	// (--permission-prompt-tool stdio); without it they are denied.
	PermissionPromptStdio bool
	// ReplayUserMessages echoes each user message read from stream-json
	// input on stdout (--replay-user-messages).
	ReplayUserMessages bool
	// Models are the models initialize offers (the session's when empty).
	Models []string
	// ContextWindow is the model's context in tokens, for
	// get_context_usage (0: the model's in Catalogue).
	ContextWindow int
	// Catalogue holds the models' context windows and list prices (the
	// session's agent.Options.Catalogue): get_context_usage's window and
	// the cost --max-budget-usd counts.
	Catalogue model.Catalogue
	// MaxBudgetUSD, when positive, stops a run once the session's turns
	// have cost this much at list price (--max-budget-usd), and refuses
	// later ones.
	MaxBudgetUSD float64
	// JSONSchema, when set, asks for a structured answer in the result's
	// structured_output (--json-schema); the host's initialize may set it.
	JSONSchema json.RawMessage
	// AwaitInitialize holds the stream-json input that comes before the
	// host's initialize until it comes (--await-initialize), so that the
	// session opens as initialize asks whatever the order of the lines.
	AwaitInitialize bool
	// IncludeHookEvents writes system/hook_started and hook_response lines
	// for every command hook HookEvents reports (--include-hook-events);
	// without it, for SessionStart's only, as Claude Code.
	IncludeHookEvents bool
	// SessionState, when set (SessionStateHost, SessionStateAll), writes
	// system/session_state_changed lines as the session starts a turn,
	// waits for the host's answer to can_use_tool and goes idle.
	SessionState string
	// HookEvents, when set, is where the command hooks' lifecycle comes
	// from; Run attaches to it.
	HookEvents *HookRelay
	// Restricted refuses set_permission_mode to bypassPermissions
	// (--restricted).
	Restricted bool
	// Effort and Betas are the effort level and the Anthropic betas asked
	// for (system/init's effort and betas).
	Effort string
	Betas  []string
	// Rules, when set, decides tool calls before the host's hooks and the
	// permission mode (--allowedTools, --disallowedTools).
	Rules func(agent.ToolCall) agent.Verdict

	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// ValidateFormats checks the format flags.
func (c *Config) ValidateFormats() error {
	switch c.OutputFormat {
	case "", FormatText, FormatJSON, FormatStreamJSON:
	default:
		return fmt.Errorf("unknown --output-format %q (want text, json or stream-json)", c.OutputFormat)
	}
	switch c.InputFormat {
	case "", "text", FormatStreamJSON:
	default:
		return fmt.Errorf("unknown --input-format %q (want text or stream-json)", c.InputFormat)
	}
	if c.InputFormat == FormatStreamJSON && c.OutputFormat != FormatStreamJSON {
		return errors.New("--input-format stream-json needs --output-format stream-json")
	}
	if c.IncludePartial && c.OutputFormat != FormatStreamJSON {
		return errors.New("--include-partial-messages needs --output-format stream-json")
	}
	return nil
}

// maxPendingOutput bounds what waits to be written: stdout is the run's
// only audience, so when it is slower than the model (a reader that does
// not keep up, a loaded machine) the model's stream waits for it, as it
// would behind a pipe, instead of piling up in memory. Without the bound a
// 100 KB answer streamed at full speed could leave its thousands of deltas
// and parts queued (up to ~1 MB, the largest part of the run's heap).
const maxPendingOutput = 64 << 10

// Run answers prompt (or, with stream-json input, every user line of
// Stdin) on sess, or on the session cfg.Open opens when sess is nil, and
// writes the output. With stream-json input it speaks Claude Code's
// control protocol with the host. It returns the process exit code: 0 on
// success, 1 when a run failed or ctx was cancelled (the cause is on
// Stderr).
func Run(ctx context.Context, sess *agent.Session, prompt string, cfg Config) int {
	if cfg.OutputFormat == "" {
		cfg.OutputFormat = FormatText
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	w := cclines.NewWriter(cfg.Stdout)
	h := newHost(cfg, w, sess)
	streamIn := cfg.InputFormat == FormatStreamJSON
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	prompts := newQueue[userInput]()
	// With stream-json input, the host's messages that arrive while a run
	// is going go to the session at once (steering); st holds them. The
	// host has both before its reader starts: an interrupt lists them.
	var st *steerer
	if streamIn {
		st = &steerer{}
		h.st, h.prompts = st, prompts
	}
	readErr := make(chan error, 1)
	if streamIn {
		go func() { readErr <- h.read(readCtx, cfg.Stdin, prompts) }()
	} else {
		if ctx.Err() == nil { // interrupted before the run: nothing to run
			prompts.push(userInput{text: prompt})
		}
		prompts.close()
	}

	code := 0
	var sub *agent.Subscription
	// start subscribes to the session and, for stream-json, starts a turn
	// with system/init as Claude Code does.
	start := func() (session.Session, error) {
		s, err := h.session()
		if err != nil {
			return nil, err
		}
		if sub == nil {
			w.SetSession(s.ID())
			var snap protocol.Snapshot
			snap, sub = h.loc.subscribe(agent.SubscribeOptions{ModelParts: cfg.OutputFormat == FormatStreamJSON, MaxPendingBytes: maxPendingOutput})
			h.tasks.Reset(snap)
		}
		if cfg.OutputFormat == FormatStreamJSON {
			h.state(stateRunning)
			w.Line(h.initLine(s))
			w.Flush()
		}
		return s, nil
	}
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	if !streamIn {
		// One prompt: its init line comes first, even when the run is
		// interrupted before it starts.
		if _, err := start(); err != nil {
			fmt.Fprintf(cfg.Stderr, "sluice: %v\n", err)
			return 1
		}
	}
	for {
		var (
			in  userInput
			pre session.Job
		)
		if sent, ok := st.nextOrNone(); ok {
			in, pre = sent.in, sent.job
		} else {
			var ok bool
			if in, ok = popIdle(ctx, prompts, sub, st, &h.tasks, w, cfg); !ok {
				break
			}
		}
		s, err := h.session()
		if streamIn && err == nil {
			s, err = start()
		}
		if err != nil {
			fmt.Fprintf(cfg.Stderr, "sluice: %v\n", err)
			code = 1
			break
		}
		if streamIn && pre == nil {
			if cfg.ReplayUserMessages && in.line != nil {
				w.Line(replayLine(in.line, s.ID()))
			}
			w.Flush()
		}
		err = runOne(ctx, s, sub, h.w, in, h.cfg, h, run{pre: pre, st: st, prompts: prompts})
		h.state(stateIdle)
		// As Claude Code's, the exit code is the last result's: an error
		// (also an interrupted turn) is 1, a later success 0 again.
		code = 0
		if err != nil {
			code = 1
			// The host's interrupt ends a turn, not the session: the result
			// says so, and the process goes on to the host's next message.
			if !(streamIn && errors.Is(err, agent.ErrAborted) && ctx.Err() == nil) {
				fmt.Fprintf(cfg.Stderr, "sluice: %v\n", err)
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	stopReading()
	if streamIn {
		if err := <-readErr; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(cfg.Stderr, "sluice: reading stream-json input: %v\n", err)
			code = 1
			h.inputFailed(err)
		}
	}
	if ctx.Err() != nil && code == 0 {
		// Interrupted between runs (or before the first): not a success.
		fmt.Fprintln(cfg.Stderr, "sluice: interrupted")
		code = 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(cfg.Stderr, "sluice: writing output: %v\n", err)
		return 1
	}
	return code
}

func (h *host) initLine(s session.Session) streamjson.InitLine {
	return streamjson.InitLine{
		Type: "system", Subtype: "init", CWD: s.WorkDir(), SessionID: s.ID(),
		Tools: initTools(s), MCPServers: h.mcpServers(), Model: s.Model(),
		PermissionMode: h.reportedMode(s), SlashCommands: []string{}, APIKeySource: h.cfg.APIKeySource,
		SluiceVersion: h.cfg.Version, OutputStyle: "default", Agents: subagentNames(s), Skills: []string{},
		Plugins: []any{}, UUID: uuid.NewString(),
		AdditionalDirs:    append([]string{}, h.cfg.AddDirs...),
		ClaudeCodeVersion: streamjson.ClaudeCodeVersion, Capabilities: streamjson.Capabilities, OriginalCWD: s.WorkDir(),
		AnalyticsDisabled: true, ProductFeedbackDisabled: true, FastModeState: "off",
		TerminalSlashCommands: []string{}, ViewMode: "default", PerTurnEffortActive: h.cfg.Effort != "",
		Betas: h.cfg.Betas, Effort: h.cfg.Effort,
	}
}

// initTools are the session's tools as Claude Code's init line names
// them: the Agent tool is "Task" there.
func initTools(s session.Session) []string {
	names := slices.Clone(s.Tools()) // renamed here: not the session's own
	for i, n := range names {
		if n == "Agent" {
			names[i] = "Task"
		}
	}
	return names
}

// subagentNames are the session's subagent kinds as system/init names
// them.
func subagentNames(s session.Session) []string {
	names := []string{}
	for _, d := range s.Subagents() {
		names = append(names, d.Name)
	}
	return names
}

// replayLine is a user message read from the host, echoed with the
// session's id (--replay-user-messages).
func replayLine(line json.RawMessage, sessionID string) any {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	m["session_id"] = sessionID
	if _, ok := m["parent_tool_use_id"]; !ok {
		m["parent_tool_use_id"] = nil
	}
	if _, ok := m["uuid"]; !ok {
		m["uuid"] = uuid.NewString()
	}
	m["isReplay"] = true
	return orderedType{m}
}

// orderedType writes a map with "type" first, as every line starts.
type orderedType struct{ m map[string]any }

func (o orderedType) MarshalJSON() ([]byte, error) {
	t, _ := json.Marshal(o.m["type"])
	rest := make(map[string]any, len(o.m))
	for k, v := range o.m {
		if k != "type" {
			rest[k] = v
		}
	}
	b, err := json.Marshal(rest)
	if err != nil || len(b) <= 2 {
		return []byte(`{"type":` + string(t) + `}`), err
	}
	return append([]byte(`{"type":`+string(t)+`,`), b[1:]...), nil
}

// run is how runOne takes its prompt with stream-json input: pre is its
// job when the prompt was given to the session mid-run (by st), and
// the prompts that arrive while it runs go to the session through st.
type run struct {
	pre     session.Job
	st      *steerer
	prompts *queue[userInput]
}

// runOne runs one prompt and writes its lines and result. An interrupt
// (ctx done) aborts the run; what it produced is still written.
func runOne(ctx context.Context, sess session.Session, sub *agent.Subscription, w *cclines.Writer, in userInput, cfg Config, hst *host, r run) error {
	start := time.Now()
	h := r.pre
	if h == nil && hst.overBudget() {
		err := budgetErr(errors.New("over budget"), hst, cfg)
		w.Line(hst.numbered(cclines.NewResultLine(sess.ID(), sess.Model(), session.JobResult{}, "", err, 0)))
		w.Flush()
		return err
	}
	stream := cfg.OutputFormat == FormatStreamJSON
	// The hook lines' sink is attached before the prompt is submitted: the
	// run's first hooks (SessionStart, UserPromptSubmit) fire as soon as
	// the session takes the prompt, and a hook observed before the sink
	// is there would have no line.
	hl := newHookLines(w, stream && cfg.HookEvents != nil, cfg.IncludeHookEvents)
	if hl.on {
		cfg.HookEvents.attach(hl.observe)
		defer cfg.HookEvents.attach(nil)
	}
	if h == nil {
		var err error
		if _, h, err = sess.SubmitMessage(ctx, in.text, in.images...); err != nil {
			hl.end()
			return err
		}
	}
	if r.st != nil {
		// The host's messages that arrive while this runs go to the
		// session now, not after the run.
		feedCtx, stopFeed := context.WithCancel(ctx)
		fed := make(chan struct{})
		go func() {
			defer close(fed)
			r.st.feed(feedCtx, sess, r.prompts, w, cfg, hst)
		}()
		defer func() {
			stopFeed()
			<-fed
		}()
	}
	// After Submit, so that an interrupt that came before it aborts the
	// message too (AfterFunc runs at once when ctx is already done).
	stop := context.AfterFunc(ctx, func() { abort(sess, "interrupted", cfg) })
	defer stop()
	tr := cclines.NewTranslator(w, cclines.Options{
		IncludePartial: cfg.IncludePartial, MaxRetries: cfg.MaxRetries, RequestModel: sess.Model(), Decided: hst.decision,
	}, &hst.tasks)
	defer func() {
		hst.mu.Lock()
		if n := tr.ContextTokens(); n > 0 {
			hst.lastInput = n
		}
		hst.mu.Unlock()
	}()
	// handle takes one item and reports whether it ended the run.
	var lines *cclines.Writer // the task lines' writer: stream-json only
	if stream {
		lines = w
	}
	handle := func(it agent.Item) bool {
		if stream {
			tr.Item(it)
		}
		if it.Event != nil {
			hst.tasks.Take(lines, it.Event, time.Now)
		}
		if e, ok := it.Event.(protocol.TurnEnded); ok && e.Usage != nil && hst.spend(hst.cost(sess.Model(), *e.Usage)) {
			abort(sess, fmt.Sprintf("the budget of $%g is spent", cfg.MaxBudgetUSD), cfg)
		}
		rs, ok := it.Event.(protocol.RunStateChanged)
		return ok && rs.State == protocol.RunIdle
	}
	// A run ends with runStateChanged idle, also when it is aborted, and
	// its job is done after that event. A message aborted while still
	// queued (an interrupt as the run starts) publishes nothing: its job
	// is done and nothing more will come.
	done, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go func() {
		select {
		case <-h.Done():
			stopWatch()
		case <-done.Done():
		}
	}()
	// ends takes one item and reports whether the run is over: its idle
	// event, or the first event of a later message's own run (which
	// follows at once when that message was queued behind this run; it is
	// kept for the next runOne).
	ends := func(it agent.Item) bool {
		if r.st.startsRun(h, it) {
			r.st.setCarry(it)
			return true
		}
		return handle(it)
	}
	over := false
	if it := r.st.takeCarry(); it != nil {
		over = ends(*it)
	}
	// Ended before the steering feed is stopped (defers run last first):
	// a hook of a message fed meanwhile must not wait for a line.
	defer hl.end()
	for !over {
		it, err := sub.NextItem(hl.waitContext(done))
		if err != nil && done.Err() == nil {
			// A hook started or ended: what the session published before
			// comes first, then the hook's line.
			if hl.write(sub, ends) {
				break
			}
			continue
		}
		if err != nil {
			// What the run published before its job was done is queued.
			for sub.Pending() > 0 {
				if it, err := sub.NextItem(context.Background()); err != nil || ends(it) {
					break
				}
			}
			break
		}
		if ends(it) {
			break
		}
		if stream && sub.Pending() == 0 {
			w.Flush() // caught up: let the reader see it now
		}
	}
	res, err := h.Wait(context.Background())
	deniedStop := hst.takeDeniedStop()
	if stream && errors.Is(err, agent.ErrAborted) && !hst.overBudget() {
		note := cclines.InterruptedByUser
		if deniedStop != nil {
			note = cclines.InterruptedForUse
		}
		tr.Aborted(note)
	}
	answer := res.Text
	structured := hst.structured.Take()
	if structured != nil && err == nil {
		// The answer is the structured one, as JSON text.
		var b bytes.Buffer
		if json.Compact(&b, structured) == nil {
			answer = b.String()
		}
	}
	var stopped []string
	if cfg.InputFormat != FormatStreamJSON {
		stopped = settleTasks(ctx, hst.loc.stopTasks, sub, &hst.tasks, lines, cfg.BackgroundWait)
		if len(stopped) > 0 {
			fmt.Fprintf(cfg.Stderr, "sluice: stopped background commands still running at the end of the run: %s\n", strings.Join(stopped, ", "))
		}
	}
	err = budgetErr(err, hst, cfg)
	switch cfg.OutputFormat {
	case FormatText:
		// As Claude Code's: an API failure's text, or the limit that
		// stopped the run, instead of the answer.
		switch {
		case cclines.APIFailure(err):
			answer = cclines.APIErrorText(err)
		case errors.Is(err, agent.ErrMaxTurns) || errors.Is(err, cclines.ErrBudget):
			answer = "Error: " + cclines.Capitalized(err.Error())
		}
		if answer != "" {
			w.Raw(answer) // whole: appending the newline would copy a long answer
			if !strings.HasSuffix(answer, "\n") {
				w.Raw("\n")
			}
		}
	case FormatJSON, FormatStreamJSON:
		if deniedStop != nil && errors.Is(err, agent.ErrAborted) {
			// The stopped call counts as denied, as in Claude Code (the
			// agent saw the abort first).
			if !slices.ContainsFunc(res.Denials, func(d agent.Denial) bool { return d.ToolID == deniedStop.ToolID }) {
				res.Denials = append(res.Denials, *deniedStop)
			}
		}
		line := cclines.NewResultLine(sess.ID(), sess.Model(), res, answer, err, time.Since(start))
		if deniedStop != nil && errors.Is(err, agent.ErrAborted) {
			line.TerminalReason = "aborted_tools"
		}
		line.StoppedTasks = stopped
		line.StructuredOutput = structured
		line = hst.numbered(line)
		if stream && cclines.APIFailure(err) {
			w.Line(cclines.NewAPIErrorLine(sess.ID(), err, time.Now()))
		}
		w.LineWith(&line, line.Result)
	}
	w.Flush()
	return err
}

// abort aborts the session's work; a session that cannot hear it is
// reported, not waited on.
func abort(sess session.Session, reason string, cfg Config) {
	if err := sess.Abort(context.Background(), reason); err != nil {
		fmt.Fprintf(cfg.Stderr, "sluice: aborting the run: %v\n", err)
	}
}

// budgetErr is err, or cclines.ErrBudget when the run failed with the budget
// spent (the budget stops a run by aborting it).
func budgetErr(err error, hst *host, cfg Config) error {
	if err != nil && !errors.Is(err, cclines.ErrBudget) && hst.overBudget() {
		return fmt.Errorf("%w ($%s)", cclines.ErrBudget, strconv.FormatFloat(cfg.MaxBudgetUSD, 'f', -1, 64))
	}
	return err
}

// inputFailed ends a session whose input ended on a line it cannot take
// with an error result, so that the last result agrees with the exit code
// (Claude Code exits 1 there after a success result). Without a session
// there is nothing to write it for.
func (h *host) inputFailed(err error) {
	if h.cfg.OutputFormat != FormatStreamJSON && h.cfg.OutputFormat != FormatJSON {
		return
	}
	select {
	case <-h.opened:
	default:
		return
	}
	if h.sess == nil {
		return
	}
	line := h.numbered(cclines.NewResultLine(h.sess.ID(), h.sess.Model(), session.JobResult{}, "", fmt.Errorf("%w: %w", cclines.ErrInput, err), 0))
	line.TerminalReason = "input_error"
	h.w.LineWith(&line, line.Result)
}

// numbered gives a result line its index among the process's results.
func (h *host) numbered(line streamjson.ResultLine) streamjson.ResultLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	line.ResultIndex = h.results
	h.results++
	return line
}

// userContent is a user line's text and its images: Anthropic image blocks
// with a base64 source, as the Agent SDK sends them.
func userContent(line []byte) (string, []agent.Image, error) {
	var in struct {
		Type    string `json:"type"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return "", nil, fmt.Errorf("input line is not JSON: %w", err)
	}
	if in.Type != "user" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(in.Message.Content, &s) == nil {
		return s, nil, nil
	}
	var blocks []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	if err := json.Unmarshal(in.Message.Content, &blocks); err != nil {
		return "", nil, fmt.Errorf("user message content is neither a string nor blocks: %w", err)
	}
	var sb strings.Builder
	var images []agent.Image
	for _, b := range blocks {
		switch b.Type {
		case "text":
			sb.WriteString(b.Text)
		case "image":
			if b.Source.Type != "base64" {
				return "", nil, fmt.Errorf("an image block's source is %q: sluice takes base64 images", b.Source.Type)
			}
			data, err := base64.StdEncoding.DecodeString(b.Source.Data)
			if err != nil {
				return "", nil, fmt.Errorf("an image block's data is not base64: %w", err)
			}
			images = append(images, agent.Image{MediaType: b.Source.MediaType, Data: data})
		}
	}
	return sb.String(), images, nil
}

// MaxInputLine bounds one line of stream-json input, as sluice rpc bounds
// one message (wire.DefaultMaxMessageBytes): a longer line is an error, and
// is never held in memory whole.
const MaxInputLine = 16 << 20

// ErrLineTooLong is returned for an input line longer than MaxInputLine.
var ErrLineTooLong = fmt.Errorf("input line longer than %d MiB", MaxInputLine>>20)

// readLine reads one line (with its newline, if any) of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, ErrLineTooLong
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}
