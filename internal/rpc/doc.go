// Package rpc is the host protocol's server: JSON-RPC 2.0 over any message
// connection, serving agent sessions to IDE plugins, desktop apps and web
// pages. `sluice rpc` runs it on stdin/stdout with one JSON message per line
// (wire.LineConn); `sluice serve` runs the same Server over WebSocket, one
// message per frame. docs/protocol.md is the protocol's reference.
//
// # API
//
//	srv := rpc.NewServer(rpc.Options{NewSession: factory, Store: st, Logger: log})
//	defer srv.Close()                                   // closes the sessions
//	err := srv.ServeConn(ctx, wire.NewLineConn(os.Stdin, os.Stdout, 0))
//
// A transport provides a wire.Conn: Read returns the next message (an error
// wrapping wire.ErrMessageTooLarge skips one and the connection goes on; io.EOF
// ends it cleanly), Write sends one message, Close unblocks both. ServeConn
// may be called for any number of connections at once; they share the
// server's sessions.
//
// # Sessions and connections
//
// The server holds a registry of running sessions keyed by id. initialize
// without a sessionId starts one (Options.NewSession supplies its agent
// options); with a sessionId it attaches to the running session, or
// restores it from Options.Store. Several connections may attach to one
// session: each receives every event, in seq order, as a notification
// whose method is the event's and whose params are the event
// (protocol.Encode). Sessions outlive connections and end at Server.Close.
//
// # Ordering
//
// Each connection has one reader and one writer goroutine, and one pump
// goroutine per attached session that moves the session's events from its
// subscription to the writer. Requests are started in arrival order on the
// reader; bang and compact are answered when done, from goroutines of
// their own, so that abort and permission answers are served meanwhile.
// Responses that carry a snapshot at seq S (initialize, restoreSession,
// getMessages, clear, rewind without requestId) are written so that the
// next notifications of that session start exactly at S+1; the answers to
// rewind, clear, compact and bang are written after the events that the
// operation published. The writer hands one message at a time to the
// wire.Conn, so a peer that reads slowly leaves the events in the session's
// subscription queue, where adjacent deltas merge (a notification may then
// carry firstSeq), and the agent is never blocked.
//
// # Bad input
//
// Invalid JSON is answered with -32700, a message that is not a request
// object with -32600, an unknown method with -32601, params that do not fit
// with -32602, and a message over the connection's size limit with -32600
// after skipping it. None of them affects a session.
package rpc
