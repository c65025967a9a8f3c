// Package printmode is sluice's headless print mode (sluice -p): one prompt
// (or a stream of them) in, the answer out as text, one JSON result, or
// stream-json lines in the shapes Claude Code emits, so that programs that
// drive Claude Code headlessly can drive sluice.
package printmode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
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
	MCPServers []MCPServer
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

func (c *Config) maxRetries() int {
	switch {
	case c.MaxRetries == 0:
		return model.DefaultMaxRetries
	case c.MaxRetries < 0:
		return 0
	}
	return c.MaxRetries
}

// Run answers prompt (or, with stream-json input, every user line of
// Stdin) on sess and writes the output. It returns the process exit code:
// 0 on success, 1 when a run failed or ctx was cancelled (the cause is on
// Stderr).
func Run(ctx context.Context, sess *agent.Session, prompt string, cfg Config) int {
	if cfg.OutputFormat == "" {
		cfg.OutputFormat = FormatText
	}
	w := &writer{out: bufio.NewWriterSize(cfg.Stdout, 64<<10), session: sess.ID()}
	sub := sess.Subscribe(agent.SubscribeOptions{ModelParts: cfg.OutputFormat == FormatStreamJSON})
	defer sub.Close()
	if cfg.OutputFormat == FormatStreamJSON {
		w.line(initLine{
			Type: "system", Subtype: "init", CWD: sess.WorkDir(), SessionID: sess.ID(),
			Tools: sess.Tools(), MCPServers: append([]MCPServer{}, cfg.MCPServers...), Model: cfg.Model,
			PermissionMode: cfg.PermissionMode, APIKeySource: cfg.APIKeySource,
			SluiceVersion: cfg.Version, UUID: uuid.NewString(),
			AdditionalDirs: append([]string{}, cfg.AddDirs...),
		})
		w.flush()
	}

	prompts := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		defer close(prompts)
		if cfg.InputFormat != FormatStreamJSON {
			if ctx.Err() != nil {
				return // interrupted before the run: nothing to run
			}
			select {
			case prompts <- prompt:
			case <-ctx.Done():
			}
			return
		}
		readErr <- readUserLines(ctx, cfg.Stdin, prompts)
	}()

	code := 0
	for p := range prompts {
		if err := runOne(ctx, sess, sub, w, p, cfg); err != nil {
			code = 1
			fmt.Fprintf(cfg.Stderr, "sluice: %v\n", err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if cfg.InputFormat == FormatStreamJSON {
		select {
		case err := <-readErr:
			if err != nil {
				fmt.Fprintf(cfg.Stderr, "sluice: reading stream-json input: %v\n", err)
				code = 1
			}
		default:
		}
	}
	if ctx.Err() != nil && code == 0 {
		// Interrupted between runs (or before the first): not a success.
		fmt.Fprintln(cfg.Stderr, "sluice: interrupted")
		code = 1
	}
	if err := w.flush(); err != nil {
		fmt.Fprintf(cfg.Stderr, "sluice: writing output: %v\n", err)
		return 1
	}
	return code
}

// runOne runs one prompt and writes its lines and result. An interrupt
// (ctx done) aborts the run; what it produced is still written.
func runOne(ctx context.Context, sess *agent.Session, sub *agent.Subscription, w *writer, prompt string, cfg Config) error {
	start := time.Now()
	h, err := sess.Submit(ctx, prompt)
	if err != nil {
		return err
	}
	// After Submit, so that an interrupt that came before it aborts the
	// message too (AfterFunc runs at once when ctx is already done).
	stop := context.AfterFunc(ctx, func() { sess.Abort("interrupted") })
	defer stop()
	stream := cfg.OutputFormat == FormatStreamJSON
	tr := newTranslator(w, cfg)
	// handle takes one item and reports whether it ended the run.
	handle := func(it agent.Item) bool {
		if stream {
			tr.item(it)
		}
		rs, ok := it.Event.(protocol.RunStateChanged)
		return ok && rs.State == protocol.RunIdle
	}
	// A run ends with runStateChanged idle, also when it is aborted, and
	// its handle is done after that event. A message aborted while still
	// queued (an interrupt as the run starts) publishes nothing: its
	// handle is done and nothing more will come.
	done, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go func() {
		select {
		case <-h.Done():
			stopWatch()
		case <-done.Done():
		}
	}()
	for {
		it, err := sub.NextItem(done)
		if err != nil {
			// What the run published before its handle was done is queued.
			for sub.Pending() > 0 {
				if it, err := sub.NextItem(context.Background()); err != nil || handle(it) {
					break
				}
			}
			break
		}
		if handle(it) {
			break
		}
		if stream && sub.Pending() == 0 {
			w.flush() // caught up: let the reader see it now
		}
	}
	res, err := h.Wait(context.Background())
	answer := res.Text
	var stopped []string
	if cfg.InputFormat != FormatStreamJSON {
		stopped = settleTasks(ctx, sess, cfg.BackgroundWait)
		if len(stopped) > 0 {
			fmt.Fprintf(cfg.Stderr, "sluice: stopped background commands still running at the end of the run: %s\n", strings.Join(stopped, ", "))
		}
	}
	switch cfg.OutputFormat {
	case FormatText:
		if answer != "" {
			w.raw(answer) // whole: appending the newline would copy a long answer
			if !strings.HasSuffix(answer, "\n") {
				w.raw("\n")
			}
		}
	case FormatJSON, FormatStreamJSON:
		line := newResultLine(sess, res, answer, err, time.Since(start))
		line.StoppedTasks = stopped
		w.line(line)
	}
	w.flush()
	return err
}

// roundCost rounds a cost in dollars to a billionth, so that a sum of
// per-token prices does not print as 0.026279999999999998.
func roundCost(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }

// newResultLine is the last line of a run, in Claude Code's shape. The
// result is always the run's answer as far as it got (agent.Result.Text,
// what --output-format text prints): the whole answer, joined across
// automatic max_tokens continuations (continued_after names the stop
// reason that cut it); after a failure, the failed response's text so
// far, possibly empty. It is never the error: a failed run has is_error
// true and its cause in errors.
func newResultLine(sess *agent.Session, res agent.Result, answer string, err error, d time.Duration) resultLine {
	line := resultLine{
		Type: "result", Subtype: "success",
		DurationMs: d.Milliseconds(), DurationAPIMs: res.APIDuration.Milliseconds(),
		NumTurns: res.Turns, Result: answer, StopReason: nullable(res.StopReason), ContinuedAfter: res.Continued,
		SessionID: sess.ID(), TotalCostUSD: roundCost(res.CostUSD), Usage: sessionUsageOf(res.Usage),
		ModelUsage: map[string]modelUsage{}, PermissionDenials: denials(res.Denials),
		UUID: uuid.NewString(),
	}
	if res.Turns > 0 {
		line.ModelUsage[sess.Model()] = modelUsage{
			InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CacheReadInputTokens: res.Usage.CacheReadInputTokens, CacheCreationInputTokens: res.Usage.CacheCreationInputTokens,
			CostUSD: roundCost(res.CostUSD),
		}
	}
	if err == nil {
		return line
	}
	line.IsError, line.Subtype = true, "error_during_execution"
	if errors.Is(err, agent.ErrMaxTurns) {
		line.Subtype = "error_max_turns"
	}
	line.Errors = []string{err.Error()}
	_, line.APIErrorStatus = errorKind(err)
	return line
}

// readUserLines reads stream-json input: one JSON object per line, of which
// {"type":"user","message":{"role":"user","content":...}} are prompts.
func readUserLines(ctx context.Context, r io.Reader, out chan<- string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, MaxInputLine)
		if len(strings.TrimSpace(string(line))) > 0 {
			text, perr := userText(line)
			if perr != nil {
				return perr
			}
			if text != "" {
				select {
				case out <- text:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func userText(line []byte) (string, error) {
	var in struct {
		Type    string `json:"type"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return "", fmt.Errorf("input line is not JSON: %w", err)
	}
	if in.Type != "user" {
		return "", nil
	}
	var s string
	if json.Unmarshal(in.Message.Content, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(in.Message.Content, &blocks); err != nil {
		return "", fmt.Errorf("user message content is neither a string nor blocks: %w", err)
	}
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == "text" {
			sb.WriteString(b.Text)
		}
	}
	return sb.String(), nil
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

// writer serialises output lines.
type writer struct {
	mu      sync.Mutex
	out     *bufio.Writer
	enc     *json.Encoder
	session string
	err     error
}

// line writes v as one JSON line. Like Claude Code's output (and
// Anthropic's API), it leaves <, > and & as they are.
func (w *writer) line(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.enc == nil {
		w.enc = json.NewEncoder(w.out)
		w.enc.SetEscapeHTML(false)
	}
	// The encoder marshals the whole value before it writes, so a value
	// that fails writes nothing.
	if err := w.enc.Encode(v); err != nil {
		w.err = errors.Join(w.err, err)
	}
}

func (w *writer) raw(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.WriteString(s)
}

func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.out.Flush(); err != nil {
		w.err = errors.Join(w.err, err)
	}
	return w.err
}
