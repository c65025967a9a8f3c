// Package backend is what the relay needs of an agent: one conversation per
// chat, and for each user message a run — a stream of session events
// (package protocol) that ends when the agent is done. Sub-packages adapt
// sluice's own agent (sluiceagent) and Claude Code run as a process
// (claudecode).
package backend

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/sluicehq/sluice/protocol"
)

// ErrUnsupported is returned by a Conversation method the backend cannot
// do (Claude Code cannot answer permission requests from a chat).
var ErrUnsupported = errors.New("backend: not supported by this backend")

// SessionKey is the key under which a backend running sluice's own agent
// keeps chat's session id in the relay's store: the same in cluster mode
// and without it, so each reads what the other wrote.
func SessionKey(chat string) string { return "sluice/session/" + chat }

// Opened holds the conversations a backend opened, for its Close. The
// zero value is ready; it is safe for concurrent use.
type Opened struct {
	mu    sync.Mutex
	convs []io.Closer
}

// Add keeps c, to be closed by Close.
func (o *Opened) Add(c io.Closer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.convs = append(o.convs, c)
}

// Close closes every conversation added so far, and forgets them.
func (o *Opened) Close() error {
	o.mu.Lock()
	convs := o.convs
	o.convs = nil
	o.mu.Unlock()
	var errs []error
	for _, c := range convs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Backend opens conversations.
type Backend interface {
	// Name names the backend for /status ("sluice", "claude").
	Name() string
	// Open returns the conversation of chat, resuming the one it had
	// before when the backend can.
	Open(ctx context.Context, chat string) (Conversation, error)
	// Close ends every conversation.
	Close() error
}

// Conversation is one chat's agent session. Its methods are safe for
// concurrent use; the relay starts one run at a time.
type Conversation interface {
	// Start sends text as the user's message and returns its run.
	Start(ctx context.Context, text string) (Run, error)
	// Abort stops the run in progress; what it produced stays, and its
	// events end.
	Abort(reason string)
	// Reset starts a new session for the chat (/new).
	Reset(ctx context.Context) error
	// Compact folds the context into a summary (/compact).
	Compact(ctx context.Context) error
	// Model is the model in use ("" for the backend's default).
	Model() string
	// SetModel changes the model for the next runs.
	SetModel(name string) error
	// AnswerPermission answers a protocol.PermissionRequest with a
	// protocol.Decision* value.
	AnswerPermission(requestID string, decision protocol.Decision) error
	// Ask answers a side question (/btw) from the conversation's context
	// without entering it, also while a run goes on; ErrUnsupported when
	// the backend cannot.
	Ask(ctx context.Context, question string) (string, error)
	// Session identifies the session for /status.
	Session() string
	// Close ends the conversation.
	Close() error
}

// Steerer is implemented by a Conversation whose agent takes a message
// while a run goes on (steering): the agent reads it at the run's next
// model request, after the tool results, or, when the run makes none,
// runs it next. The run it was given during settles it (SteeredRun).
type Steerer interface {
	// Steer gives text to the conversation while its run goes on and
	// returns the id its userMessageAdded will carry once it is sent.
	Steer(ctx context.Context, text string) (string, error)
}

// SteeredRun is implemented by the Runs of a Steerer.
type SteeredRun interface {
	// Settle says, once Next returned io.EOF, what became of the
	// messages steered while the run went, by id: those that joined the
	// run (its answer is theirs), those dropped unsent (an abort), and
	// next, the run of the first that got a run of its own (nil if none);
	// the messages after that one are settled by next. A run whose Next
	// has ended hands its event stream to next.
	Settle() (joined, dropped []string, next Run)
}

// Run is the event stream of one user message.
type Run interface {
	// Next returns the run's next event; io.EOF once the run ended.
	Next(ctx context.Context) (protocol.Event, error)
	// Result is the run's result text (the answer as the backend reports
	// it), valid after Next returned io.EOF; the relay sends it only when
	// nothing was streamed.
	Result() string
	// Close releases the run; it does not abort it.
	Close() error
}
