// Package channel is what the relay needs of a chat platform: the users'
// text messages in, text messages and a typing indicator out. Its
// sub-packages speak WeChat's and Telegram's HTTP APIs.
package channel

import "context"

// Inbound is a user's text message to the bot.
type Inbound struct {
	// Chat is where replies go: the user (WeChat) or chat (Telegram) id.
	Chat string
	Text string
	// Key identifies the message for de-duplication: platforms deliver
	// at least once.
	Key string
}

// Channel is a chat platform. Its methods are safe for concurrent use.
type Channel interface {
	// Name names the channel ("wechat", "telegram").
	Name() string
	// Limit is the longest message, in UTF-16 code units.
	Limit() int
	// Receive calls handle with each inbound message, in order, until ctx
	// is done, and then returns ctx's error. Transient failures (the
	// network, the platform's 5xx) are logged and retried with backoff
	// inside; it returns early, with the cause, only when it cannot
	// receive at all (a revoked token, an address it cannot listen on).
	// handle must not block for long.
	Receive(ctx context.Context, handle func(context.Context, Inbound)) error
	// Send sends one text message; its errors follow package deliver's.
	Send(ctx context.Context, chat, text string) error
	// Typing shows (or, where the platform can, hides) the typing
	// indicator.
	Typing(ctx context.Context, chat string, on bool) error
}

// Acceptor is a Channel that can tell the platform a message was not
// taken, so that the platform delivers it again (a webhook answering an
// error status). The relay then receives with ReceiveAccepting, whose
// accept returns an error for a message it refused; Receive's rules hold
// otherwise.
type Acceptor interface {
	Channel
	ReceiveAccepting(ctx context.Context, accept func(context.Context, Inbound) error) error
}
