-- The hub's journal (SPEC H2, H3): one row per attempt, written before each step. States:
-- intent, claimed, launching, started, finished, acknowledged, denied, held, resolved.
-- `approval_id` is unique: one approval is attempted at most once per journal. Timestamps are
-- RFC 3339 TEXT; `evidence` is the evidence JSON; `note` a fixed reason code.

CREATE TABLE IF NOT EXISTS hub_journal (
    attempt_id   TEXT PRIMARY KEY NOT NULL,
    hub_id       TEXT NOT NULL,
    approval_id  TEXT NOT NULL UNIQUE,
    request_id   TEXT NOT NULL,
    revision     INTEGER NOT NULL,
    epoch        INTEGER NOT NULL,
    repository   TEXT NOT NULL,
    pr_number    INTEGER NOT NULL,
    head_sha     TEXT NOT NULL,
    scope        TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    state        TEXT NOT NULL,
    held_from    TEXT,
    authority    TEXT,
    authority_id TEXT,
    run_id       TEXT,
    outcome      TEXT,
    evidence     TEXT,
    note         TEXT,
    resolution   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hub_journal_state ON hub_journal (state, created_at);
CREATE INDEX IF NOT EXISTS hub_journal_request ON hub_journal (request_id);
