// Package claudecode is the relay backend that runs Claude Code as a
// process per message, the setup of seed 004:
//
//	claude -p --output-format stream-json --verbose --include-partial-messages [--resume ID]
//
// with the user's message on standard input. Its output becomes session
// events through package streamjson; the session id it reports is kept per
// chat (in the relay's store) so the next message resumes the
// conversation. Approvals cannot be asked in the chat: the permission mode
// setting decides (passed as --permission-mode).
package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/protocol"
)

// KV keeps each chat's session id and model (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Config configures the backend.
type Config struct {
	// Command is the claude executable (default "claude" on $PATH).
	Command string
	// Args are added to every invocation (for example --max-turns 30).
	Args           []string
	WorkDir        string
	PermissionMode string
	Model          string   // the default model; /model changes it per chat
	Env            []string // nil: the relay's environment
	KV             KV       // required
	Logger         *slog.Logger
	// AbortGrace is how long an interrupted process has to exit before it
	// is killed (default 5 s).
	AbortGrace time.Duration
}

// Backend runs Claude Code.
type Backend struct{ cfg Config }

// New returns the backend.
func New(cfg Config) *Backend {
	if cfg.Command == "" {
		cfg.Command = "claude"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AbortGrace <= 0 {
		cfg.AbortGrace = 5 * time.Second
	}
	return &Backend{cfg: cfg}
}

// Name is "claude".
func (b *Backend) Name() string { return "claude" }

// Close does nothing: every process ends with its run.
func (b *Backend) Close() error { return nil }

// Open returns the chat's conversation, resuming its saved session.
func (b *Backend) Open(ctx context.Context, chat string) (backend.Conversation, error) {
	c := &conversation{b: b, chat: chat, model: b.cfg.Model}
	if v, err := b.cfg.KV.Get(ctx, c.key("session")); err == nil {
		c.session = v
	}
	if v, err := b.cfg.KV.Get(ctx, c.key("model")); err == nil {
		c.model = v
	}
	return c, nil
}

type conversation struct {
	b    *Backend
	chat string

	mu      sync.Mutex
	session string
	model   string
	current *run
}

func (c *conversation) key(what string) string { return "claude/" + what + "/" + c.chat }

func (c *conversation) Start(ctx context.Context, text string) (backend.Run, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	if c.session != "" {
		args = append(args, "--resume", c.session)
	}
	if c.model != "" {
		args = append(args, "--model", c.model)
	}
	if m := c.b.cfg.PermissionMode; m != "" {
		args = append(args, "--permission-mode", m)
	}
	args = append(args, c.b.cfg.Args...)
	cmd := exec.Command(c.b.cfg.Command, args...)
	cmd.Dir = c.b.cfg.WorkDir
	cmd.Env = c.b.cfg.Env
	cmd.SysProcAttr = procAttr()
	cmd.Stdin = strings.NewReader(text)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r := &run{conv: c, cmd: cmd, dec: streamjson.NewDecoder(), lines: make(chan []byte, 64), done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("claudecode: start %s: %w", c.b.cfg.Command, err)
	}
	go r.read(stdout)
	c.current = r
	return r, nil
}

func (c *conversation) Abort(reason string) {
	c.mu.Lock()
	r := c.current
	c.mu.Unlock()
	if r != nil {
		r.abort(c.b.cfg.AbortGrace)
	}
}

func (c *conversation) Reset(ctx context.Context) error {
	c.Abort("new session")
	c.mu.Lock()
	c.session = ""
	c.mu.Unlock()
	return c.b.cfg.KV.Put(ctx, c.key("session"), "")
}

// Compact sends Claude Code its /compact command on the chat's session.
func (c *conversation) Compact(ctx context.Context) error {
	c.mu.Lock()
	has := c.session != ""
	c.mu.Unlock()
	if !has {
		return nil
	}
	r, err := c.Start(ctx, "/compact")
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		if _, err := r.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (c *conversation) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model
}

func (c *conversation) SetModel(name string) error {
	c.mu.Lock()
	c.model = name
	c.mu.Unlock()
	return c.b.cfg.KV.Put(context.Background(), c.key("model"), name)
}

func (c *conversation) AnswerPermission(string, protocol.Decision) error {
	return backend.ErrUnsupported
}

// Ask is not offered: a claude -p process has no side questions.
func (c *conversation) Ask(context.Context, string) (string, error) {
	return "", backend.ErrUnsupported
}

func (c *conversation) Session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

func (c *conversation) Close() error {
	c.Abort("closed")
	return nil
}

// run follows one claude process.
type run struct {
	conv   *conversation
	cmd    *exec.Cmd
	dec    *streamjson.Decoder
	lines  chan []byte
	done   chan struct{} // closed when the process has exited
	stderr tailBuffer

	pending []protocol.Event
	ended   bool
	waitErr error
	once    sync.Once
}

// read forwards stdout's lines, then waits for the process.
func (r *run) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			r.lines <- line
		}
		if err != nil {
			break
		}
	}
	close(r.lines)
	r.waitErr = r.cmd.Wait()
	close(r.done)
}

func (r *run) abort(grace time.Duration) {
	r.once.Do(func() {
		if r.cmd.Process == nil {
			return
		}
		_ = r.cmd.Process.Signal(os.Interrupt)
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-r.done:
			case <-t.C:
				_ = r.cmd.Process.Kill()
			}
		}()
	})
}

func (r *run) Next(ctx context.Context) (protocol.Event, error) {
	for len(r.pending) == 0 {
		if r.ended {
			return nil, io.EOF
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case line, ok := <-r.lines:
			if !ok {
				r.finish()
				continue
			}
			evs, err := r.dec.Line(line)
			if err != nil {
				// Claude Code prints only JSON lines; anything else is
				// noise (a warning on stdout) and carries no answer.
				r.conv.b.cfg.Logger.Warn("relay: claude printed a line that is not stream-json", "err", err)
				continue
			}
			r.pending = evs
		}
	}
	ev := r.pending[0]
	r.pending = r.pending[1:]
	return ev, nil
}

// finish runs when stdout closed: it saves the session for --resume and
// turns a failed exit without a result line into an error event.
func (r *run) finish() {
	<-r.done
	r.ended = true
	c := r.conv
	if id := r.dec.SessionID(); id != "" {
		c.mu.Lock()
		changed := c.session != id
		c.session = id
		c.mu.Unlock()
		if changed {
			if err := c.b.cfg.KV.Put(context.Background(), c.key("session"), id); err != nil {
				c.b.cfg.Logger.Error("relay: cannot save the Claude Code session", "err", err)
			}
		}
	}
	c.mu.Lock()
	if c.current == r {
		c.current = nil
	}
	c.mu.Unlock()
	if _, ok := r.dec.Result(); ok {
		return
	}
	msg := "claude ended without a result"
	if r.waitErr != nil {
		msg = "claude: " + r.waitErr.Error()
	}
	if tail := strings.TrimSpace(r.stderr.String()); tail != "" {
		msg += ": " + tail
	}
	r.pending = append(r.pending, protocol.ErrorBlockAdded{Error: msg}, protocol.RunStateChanged{State: protocol.RunIdle})
}

func (r *run) Result() string {
	res, _ := r.dec.Result()
	return res.Text
}

func (r *run) Close() error { return nil }

// tailBuffer keeps the last 2 KiB written: enough of stderr to say why
// claude failed.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 2048 {
		b := t.buf.Bytes()[t.buf.Len()-2048:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), b...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
