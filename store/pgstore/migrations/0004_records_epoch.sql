-- The lease epoch a record was appended under (0: not in cluster mode, or
-- before this migration). Appends are fenced by the lease, so a session's
-- epochs never go back along its records: a record of a lower epoch after
-- a higher one would be a write of a node that had lost the session.
ALTER TABLE records ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
