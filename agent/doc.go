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
// returns a Handle, Run queues and waits for the result. Abort stops the work
// in progress and drops what is queued; Rewind and Clear abort first.
//
// All methods are safe for concurrent use.
//
// # Delivery and ordering of events
//
// What a subscriber can rely on:
//
//   - Every event carries the session's seq, one more than the event before.
//     An event is applied to the session's own list and queued to every
//     subscriber under one lock, so a snapshot at seq S reflects exactly the
//     events up to S, and every subscriber receives the events in seq order.
//   - Nothing is dropped: a Subscription receives every event published from
//     the moment it was created until it or the session is closed. Events
//     queued before a close are still returned by Next before ErrClosed.
//   - Publishing never waits for a subscriber. A subscription's queue has no
//     count limit; adjacent deltas of one block are merged in it by
//     concatenation in arrival order (protocol.Merger), never last value
//     wins, so a subscriber that reads nothing holds memory in proportion to
//     the content streamed, not to the number of events. A merged event
//     carries the seq of its last part (and FirstSeq of its first). A
//     subscription with SubscribeOptions.MaxPendingBytes bounds its queue
//     instead: past the bound, the session stops reading the model's
//     stream until the subscriber catches up (publishing still never
//     waits: the run does, between model parts).
//   - SnapshotAndSubscribe returns a snapshot and a subscription that starts
//     exactly after it: no event is both in the snapshot and delivered, and
//     none is missed.
//   - A bounded replay buffer keeps the most recent events, so a consumer
//     that reconnects with its last seq receives exactly the events it
//     missed (SubscribeFrom), or ErrTooFarBehind when it must pull a
//     snapshot instead.
//   - Model parts (SubscribeOptions.ModelParts) are interleaved in the order
//     they arrived; they carry no seq and are never merged.
//   - Events and snapshots are copies: nothing a subscriber holds aliases the
//     session's structures.
//
// # Concurrency inside a Session
//
// These are the invariants the code keeps; a change that breaks one is a
// bug even if the tests pass.
//
// Goroutines. The worker goroutine (started by New and Open) runs the jobs
// one at a time: a message's model requests and tool calls, bangs,
// compactions, rewinds and clears. Only the worker changes the model's
// context (ctxMsgs, marks, epoch, ctxTokens) and decides what is published
// for a run. Each tool call runs on a goroutine of its own (the read-only
// calls of one response side by side, the others one at a time) while the
// worker waits for it; it publishes its tool block's events and may wait for
// a permission answer. The journal's flusher goroutine writes the session file.
// Every exported method may be called from any goroutine: those that change
// the session (Submit, Run, Bang, Compact, Rewind, Clear) queue a job for the
// worker; Abort cancels the current job's context and empties the queue;
// AnswerPermission hands the answer to the waiting tool goroutine; SetModel
// and SetPermissionMode change fields under Session.mu that the next request
// or tool call reads.
//
// Locks and what they guard.
//
//   - Session.mu guards the session's mutable fields: the model and
//     permission mode, the always-allowed tools, the model's context and its
//     marks, the job queue and the current job, the pending permission
//     waiters, the closed flag.
//   - bus.mu guards the published state: the reduced list and its seq, the
//     subscriptions and their queues, the replay buffer and the run state.
//     Publishing, snapshotting and subscribing take it; so does building a
//     record that copies a message, so that it stands after exactly the
//     events it reflects.
//   - journal.wmu serialises writes to the session file; journal.mu guards
//     the entries waiting to be written.
//   - toolOutput.mu guards one running tool's output accounting.
//
// Lock order: Session.mu before bus.mu before journal.mu; journal.wmu before
// journal.mu. A lock is never taken while a later one in that order is held,
// and none is held across a model request, a tool call or a wait for a
// subscriber (subscribers are never waited for).
//
// # Tools must return promptly
//
// A tool.Tool's Run must return soon after its context is done: Abort,
// Rewind, Clear and Close cancel that context and then wait for the job to
// end, so a tool that ignores it blocks them (and every later job of the
// session). A tool that starts processes must stop them when the context is
// done, as the built-in Bash tool kills its process group.
package agent
