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
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
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

// Run answers prompt (or, with stream-json input, every user line of
// Stdin) on sess and writes the output. It returns the process exit code:
// 0 on success, 1 when a run failed (the cause is on Stderr).
func Run(ctx context.Context, sess *agent.Session, prompt string, cfg Config) int {
	if cfg.OutputFormat == "" {
		cfg.OutputFormat = FormatText
	}
	w := &writer{out: bufio.NewWriterSize(cfg.Stdout, 64<<10), session: sess.ID()}
	sub := sess.Subscribe(agent.SubscribeOptions{ModelParts: cfg.OutputFormat == FormatStreamJSON})
	defer sub.Close()
	if cfg.OutputFormat == FormatStreamJSON {
		w.line(map[string]any{
			"type": "system", "subtype": "init", "cwd": sess.WorkDir(), "session_id": sess.ID(),
			"tools": sess.Tools(), "mcp_servers": []any{}, "model": cfg.Model,
			"permissionMode": cfg.PermissionMode, "apiKeySource": cfg.APIKeySource,
			"sluice_version": cfg.Version, "uuid": uuid.NewString(),
		})
		w.flush()
	}

	prompts := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		defer close(prompts)
		if cfg.InputFormat != FormatStreamJSON {
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
	stop := context.AfterFunc(ctx, func() { sess.Abort("interrupted") })
	defer stop()
	h, err := sess.Submit(ctx, prompt)
	if err != nil {
		return err
	}
	tr := newTranslator(w, cfg)
	for {
		// The run always ends with runStateChanged idle, also when it is
		// aborted, so reading until then cannot hang.
		it, err := sub.NextItem(context.Background())
		if err != nil {
			break
		}
		tr.item(it)
		if rs, ok := it.Event.(protocol.RunStateChanged); ok && rs.State == protocol.RunIdle {
			break
		}
		if cfg.OutputFormat == FormatStreamJSON && sub.Pending() == 0 {
			w.flush() // caught up: let the reader see it now
		}
	}
	res, err := h.Wait(context.Background())
	switch cfg.OutputFormat {
	case FormatText:
		if err == nil {
			text := res.Text
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			w.raw(text)
		}
	case FormatJSON, FormatStreamJSON:
		w.line(resultLine(sess.ID(), res, err, time.Since(start)))
	}
	w.flush()
	return err
}

// resultLine is the last line of a run, in Claude Code's shape.
func resultLine(sessionID string, res agent.Result, err error, d time.Duration) map[string]any {
	subtype, isErr := "success", false
	text := res.Text
	switch {
	case errors.Is(err, agent.ErrMaxTurns):
		subtype, isErr = "error_max_turns", true
	case err != nil:
		subtype, isErr = "error_during_execution", true
		if text == "" {
			text = err.Error()
		}
	}
	denials := res.Denials
	if denials == nil {
		denials = []agent.Denial{}
	}
	line := map[string]any{
		"type": "result", "subtype": subtype, "is_error": isErr,
		"duration_ms": d.Milliseconds(), "duration_api_ms": res.APIDuration.Milliseconds(),
		"num_turns": res.Turns, "result": text, "session_id": sessionID,
		"total_cost_usd": res.CostUSD, "usage": res.Usage, "stop_reason": nullable(res.StopReason),
		"permission_denials": denials, "uuid": uuid.NewString(),
	}
	if err != nil {
		line["error"] = err.Error()
	}
	return line
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// readUserLines reads stream-json input: one JSON object per line, of which
// {"type":"user","message":{"role":"user","content":...}} are prompts.
func readUserLines(ctx context.Context, r io.Reader, out chan<- string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
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

// writer serialises output lines.
type writer struct {
	mu      sync.Mutex
	out     *bufio.Writer
	session string
	err     error
}

func (w *writer) line(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := json.Marshal(v)
	if err != nil {
		w.err = errors.Join(w.err, err)
		return
	}
	w.out.Write(data)
	w.out.WriteByte('\n')
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
