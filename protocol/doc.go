// Package protocol is the session event protocol that every face of sluice
// shares: the view state (the message list, the run state and the
// permission requests waiting for an answer), the events that change it,
// their JSON wire form and the one reducer (List) that applies them.
//
// # State
//
// A session holds an ordered list of messages; a message holds an ordered
// list of blocks (text, reasoning, tool, error, compact). The agent is the
// only writer. Every change is published as one Event whose Header.Seq is
// exactly one more than the previous event's.
//
// # Delivery and ordering guarantees
//
//   - Pure deltas: no event carries accumulated text. Only message-added
//     events, a tool's running/end parameters, its bounded shortResult and
//     its final result are whole values. The bytes of all events of an
//     answer are O(answer).
//   - Explicit addressing: block events name their message and block index.
//     A text or reasoning block never reopens: each run is a new block.
//   - Tool stages only go forward: start → streaming* → running* → end.
//   - Values, never references: events and snapshots are copies. Events are
//     immutable once published.
//   - Lossless ordered delivery: a buffering stage may merge adjacent deltas
//     of one block (Merge), never drop or reorder them. A merged event
//     carries Header.FirstSeq.
//   - Snapshots: a consumer that replaces its list with a Snapshot drops
//     later-arriving events whose seq is not greater than the snapshot's
//     (ErrStale) and applies the rest; a gap in seq (ErrGap) or an event that
//     does not fit (ErrInconsistent) means: pull a snapshot.
//
// The JSON test vectors in testdata/vectors are normative for every reducer
// of the project, including the web page's JavaScript port.
package protocol
