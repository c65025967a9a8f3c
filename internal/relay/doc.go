// Package relay is sluice's chat relay: people talk to a coding agent from
// WeChat or Telegram, and the agent's answers reach them turn by turn
// (seed 004).
//
// The pieces: package route decides which messages a run produces, by the
// stop reason of each model turn; package split cuts them to the channel's
// limit; package deliver sends them, in order per conversation, paced per
// channel, kept in the state file (package store) until the platform took
// them; package channel/wechat and channel/telegram speak the platforms'
// HTTP APIs; package backend runs the agent (sluice's own, or Claude Code
// as a process). This package wires them together (Relay), answers the chat
// commands, holds the preview tool (Simulate), the platforms' table
// (Platforms: a new platform is its channel package, its file here and one
// line there) and a configured run (Run). The command line is
// cmd/sluice's, whose set-up builds the sluice backend's agent as every
// face's: settings, MCP servers, memory files, subagents and hooks.
//
// Nothing is dropped silently: a question is stored (the store's inbox)
// before it is acknowledged to the platform and leaves only with its
// answer, so after a crash it is answered, or — if the agent was already
// answering it — its chat is told the answer was cut off. Delivery is at
// least once (README.md, "What a crash does").
//
// Cluster mode (Cluster, README.md "Running a cluster"): several relay
// processes on one bot account share a PostgreSQL database and a NATS
// server. The node holding the account's channel lease (store/pgstore's
// leases, with an epoch and a TTL) is the relay above, its state in
// PostgreSQL and every write fenced by the lease; the others stand by and
// one takes over, as a restart would, when the lease expires. The chats'
// sessions are the cluster's (backend/sluiceagent on internal/cluster's
// Node), so they survive their node and `sluice serve` nodes see them. Webhook
// updates posted to a node that does not hold the channel are forwarded
// to the holder over NATS and acknowledged only once stored.
package relay
