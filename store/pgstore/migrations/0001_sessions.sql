-- Sessions and their logs. A session is keyed like store.Key: the working
-- directory it runs in (cwd) and its id. owner and epoch are the lease of
-- cluster mode (issue 15): the node running the session's agent and the
-- fencing epoch it holds; a single node leaves them empty and 0.
CREATE TABLE sessions (
	cwd         text        NOT NULL,
	id          text        NOT NULL,
	title       text        NOT NULL DEFAULT '',
	owner       text        NOT NULL DEFAULT '',
	epoch       bigint      NOT NULL DEFAULT 0,
	created_at  timestamptz NOT NULL DEFAULT now(),
	modified_at timestamptz NOT NULL DEFAULT now(),
	-- records and size are kept with each append so that listing sessions
	-- reads no log.
	records     bigint      NOT NULL DEFAULT 0,
	size        bigint      NOT NULL DEFAULT 0,
	PRIMARY KEY (cwd, id)
);

CREATE INDEX sessions_cwd_modified ON sessions (cwd, modified_at DESC);

-- The log: records in append order (seq from 1). json, not jsonb, keeps each
-- record's text exactly as the agent wrote it.
CREATE TABLE records (
	cwd  text   NOT NULL,
	id   text   NOT NULL,
	seq  bigint NOT NULL,
	data json   NOT NULL,
	PRIMARY KEY (cwd, id, seq),
	FOREIGN KEY (cwd, id) REFERENCES sessions (cwd, id) ON DELETE CASCADE
);
