-- The audit table keyed by its rowid: `seq` becomes `INTEGER PRIMARY KEY`, SQLite's alias of
-- the rowid, where `BIGINT PRIMARY KEY` kept a separate index of `seq` beside the table. An
-- append then writes the table and two indexes (`id`, `run_id`) instead of three, and reading
-- the chain in order or its newest record walks the table itself.
--
-- The rows are copied as they are: every record keeps its `seq`, id, values and hashes, so
-- the chain verifies as before. `audit_run` indexes `run_id` alone, as every index of a rowid
-- table ends with the rowid (here `seq`) anyway.

CREATE TABLE audit_by_seq (
    seq            INTEGER PRIMARY KEY NOT NULL,
    id             TEXT NOT NULL UNIQUE,
    at             TEXT NOT NULL,
    agent          TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    call_id        TEXT NOT NULL,
    action         TEXT NOT NULL,
    input          TEXT NOT NULL,
    policy         TEXT NOT NULL,
    risk           DOUBLE PRECISION NOT NULL,
    outcome        TEXT NOT NULL,
    latency_ms     BIGINT NOT NULL,
    sandbox        TEXT NOT NULL,
    approval_id    TEXT NOT NULL,
    rollback_token TEXT NOT NULL,
    detail         TEXT NOT NULL,
    prev_hash      TEXT NOT NULL,
    hash           TEXT NOT NULL
);

INSERT INTO audit_by_seq (
    seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, latency_ms,
    sandbox, approval_id, rollback_token, detail, prev_hash, hash
)
SELECT
    seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, latency_ms,
    sandbox, approval_id, rollback_token, detail, prev_hash, hash
FROM audit ORDER BY seq;

DROP TABLE audit;
ALTER TABLE audit_by_seq RENAME TO audit;
CREATE INDEX audit_run ON audit (run_id);
