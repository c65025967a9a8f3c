// Package acp is sluice's Agent Client Protocol face: an ACP v1 agent on a
// pair of streams (stdin/stdout for sluice acp), so that Zed, JetBrains
// IDEs, Neovim and every other ACP client can drive a sluice session.
//
// Like every face it is a view of the one session event protocol: each
// session's events (agent.Subscription) are translated one by one into
// session/update notifications (see updates.go), and a loaded session is
// replayed from its snapshot (protocol.Snapshot). It keeps no text or delta
// state of its own: a chunk event becomes one chunk notification, a tool
// block's stage becomes one tool_call or tool_call_update carrying what the
// event carries.
//
// The JSON-RPC framing and the ACP types are the Go ACP SDK's
// (github.com/coder/acp-go-sdk). Where the SDK falls short this package
// adds what is missing: the SDK logs and skips a line that is not JSON, and
// stops reading at a line longer than its buffer, so lines go through a
// filter first (conn.go) that answers them with JSON-RPC errors instead.
//
// What ACP v1 cannot express is said in words: a clear or a rewind (no
// update takes messages out of a client's view) and a retried attempt (no
// update takes chunks back) become agent messages or thoughts.
//
// Tools run through the client when it offers to (clienttools.go): Read,
// Write and Edit use fs/read_text_file and fs/write_text_file (the editor's
// unsaved buffers are seen, edits land in the editor), and Bash runs in a
// terminal/create terminal that the tool call embeds.
package acp
