// Package session holds the one handle every face of sluice drives a
// session through: the terminal UI, print mode, the JSON-RPC host protocol,
// the web page, ACP and the chat relay. A Session is a view state to
// subscribe to and pull snapshots from, plus the commands of the protocol
// (package protocol). Where the agent runs is the handle's business, not
// the face's: Local wraps an *agent.Session of this process; a cluster
// node's Host hands out sessions whose agent may run on another node.
//
// # Delivery and ordering
//
// What a consumer of a Session can rely on, whatever runs it:
//
//   - Events arrive in seq order. Every event of a session carries its seq,
//     one more than the event before; a Subscription's Next returns them in
//     that order. An event that merges several (see below) carries the seq
//     of its last part and protocol.Header.FirstSeq of its first.
//   - Events are pure deltas (protocol's rule 1): a text chunk, never the
//     text so far. Apply them with the one reducer, protocol.List.
//   - No gaps and no duplicates per subscription: from the moment a
//     Subscription is created until it or the session is closed, it
//     delivers every event exactly once. Events queued before a close are
//     still returned by Next before the close's error.
//   - SnapshotAndSubscribe returns the state after every event up to some
//     seq N (protocol.Snapshot.Seq) and a Subscription whose first event is
//     N+1: no event is both in the snapshot and delivered, none is missed.
//     SubscribeFrom(n) delivers the events after n when they are still
//     buffered, and fails otherwise (agent.ErrTooFarBehind, or a *wire.Error
//     from a remote session): pull a snapshot then.
//   - A slow subscriber loses nothing and never stalls publishing or the
//     other subscribers. Its queue merges adjacent deltas of one block by
//     concatenation in arrival order (never last value wins), so its memory
//     is bounded by the content streamed, not by the number of events. A
//     session made with LocalBounded goes further: past the bound, the run
//     stops reading the model's stream until the subscriber catches up.
//   - Snapshots and events are copies: nothing a consumer holds aliases the
//     session's own structures.
//
// # Commands, errors and close
//
// Submit, Abort, Rewind, Clear, SubmitCompact, SubmitBang, SetModel,
// SetPermissionMode, AnswerPermission and Ask act on the session wherever
// it runs; for a session run by another node they are forwarded to it and
// their ctx bounds the wait. Rewind and Clear return once their event is
// published, with the seq it has. An error may be a *wire.Error, carrying
// the protocol's code (wire.CodeSessionClosed once the session is closed,
// wire.CodeRequestFailed when the agent refused, ...): a face answers it
// as it is. Other errors are this process's own (agent.ErrClosed, a
// context's error).
//
// Close stops the session's work in this process: a run in progress is
// aborted and its last events published, then every Subscription's Next
// returns what is queued and then an error. A session a cluster node owns
// releases its lease, so that another node may take it at once; a handle
// on a session another node runs just stops following it. Closing twice is
// harmless. A Subscription's Close stops that subscription only.
//
// # Concurrency
//
// A Session's and a Host's methods are safe for concurrent use. A
// Subscription's Next may be called from one goroutine at a time; its Close
// may be called from any goroutine and unblocks Next.
package session
