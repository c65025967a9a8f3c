// Package wire holds the messages of sluice's host protocol (JSON-RPC 2.0,
// docs/protocol.md) as Go types, shared by the server (`sluice rpc`, `sluice
// serve`) and by hosts such as package client: the method names, each
// request's params and result, the JSON-RPC error object and its codes, and
// Conn, the message connection both ends speak over (LineConn frames one
// message per line, as `sluice rpc` does on stdio).
//
// The session events that travel as notifications are package protocol's.
package wire
