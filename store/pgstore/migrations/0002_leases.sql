-- Cluster mode (issue 15): which node runs a session's agent, and the
-- session's last checkpoint.
--
-- A lease is keyed by the session id alone: a node takes it before the
-- session has a row in sessions (a new session) and nodes name sessions by
-- id, not by working directory. So the owner and epoch move from sessions,
-- where 0001 left them unused, to leases; List reads the owner from here.
ALTER TABLE sessions DROP COLUMN owner, DROP COLUMN epoch;

-- One row per session ever leased. The row is kept when the lease is
-- released (node '') or expires, so that epoch only ever grows: a node
-- fenced out at epoch n can never see n current again.
CREATE TABLE leases (
	session     text        PRIMARY KEY,
	node        text        NOT NULL,
	epoch       bigint      NOT NULL,
	-- Judged against the database's clock, never a node's.
	expires_at  timestamptz NOT NULL,
	acquired_at timestamptz NOT NULL,
	renewed_at  timestamptz NOT NULL
);

-- A session's latest snapshot and the seq of the last event it holds.
-- json, not jsonb: the snapshot comes back as the node wrote it.
CREATE TABLE checkpoints (
	session  text        PRIMARY KEY,
	seq      bigint      NOT NULL,
	-- The lease epoch under which it was saved (fencing made it current).
	epoch    bigint      NOT NULL,
	snapshot json        NOT NULL,
	saved_at timestamptz NOT NULL DEFAULT now()
);
