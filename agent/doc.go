// Package agent runs an agent session: the loop from a user message through
// model responses and tool calls to the end of the turn, with the session's
// state published as the ordered, pure-delta events of package protocol.
//
// A Session is the one writer of its state. Every face (the terminal UI,
// print mode, the JSON-RPC host protocol, the web page, the chat relay, a Go
// program) reads it the same way: Subscribe for the events, Messages for a
// snapshot, or SnapshotAndSubscribe for both without a gap or an overlap.
//
// Work is serialised: user messages, shell commands (Bang) and compactions
// run one after another on the session's worker goroutine; Submit queues and
// returns a Handle, Run queues and waits for the result. Abort stops the work in
// progress and drops what is queued; Rewind and Clear abort first.
//
// All methods are safe for concurrent use.
package agent
