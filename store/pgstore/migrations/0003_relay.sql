-- Cluster mode of `sluice relay` (issue 15): the relay's delivery state,
-- shared by the relay nodes of one chat account, in a schema of its own so
-- that the relay's store (internal/relay/store) runs the same statements
-- on PostgreSQL as on its SQLite file, with search_path naming this schema
-- first. Every relay account shares the tables: its rows' channel and key
-- columns start with the account ("telegram/123456|").
CREATE SCHEMA sluice_relay;

-- Messages to users not yet taken by the platform.
CREATE TABLE sluice_relay.outbox (
	id         bigserial PRIMARY KEY,
	channel    text      NOT NULL,
	chat       text      NOT NULL,
	kind       text      NOT NULL,
	text       text      NOT NULL,
	created_ms bigint    NOT NULL
);
CREATE INDEX outbox_channel ON sluice_relay.outbox (channel, id);

-- Inbound message keys already handled (the platforms deliver at least
-- once).
CREATE TABLE sluice_relay.seen (
	channel text   NOT NULL,
	key     text   NOT NULL,
	at_ms   bigint NOT NULL,
	PRIMARY KEY (channel, key)
);

-- Users' questions not answered yet; started: the agent began answering.
CREATE TABLE sluice_relay.inbox (
	id         bigserial PRIMARY KEY,
	channel    text      NOT NULL,
	chat       text      NOT NULL,
	text       text      NOT NULL,
	started    integer   NOT NULL DEFAULT 0,
	created_ms bigint    NOT NULL
);
CREATE INDEX inbox_channel ON sluice_relay.inbox (channel, id);

-- Small values: the platform's cursor, WeChat's context tokens, each
-- chat's session id.
CREATE TABLE sluice_relay.kv (
	key   text PRIMARY KEY,
	value text NOT NULL
);
