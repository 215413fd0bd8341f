-- The work ledger (SPEC H1, H2): work requests, the owner's approvals pinned to what they were
-- given for, the one-time authorities issued to hubs, and the results hubs report.
-- Timestamps are RFC 3339 TEXT (fixed width, so text order is time order); evidence is JSON
-- TEXT. Nothing here is ever deleted: a revoked request keeps its rows.

CREATE TABLE IF NOT EXISTS ledger_requests (
    id          TEXT PRIMARY KEY NOT NULL,
    revision    INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    requester   TEXT NOT NULL,
    repository  TEXT NOT NULL,
    pr_number   INTEGER NOT NULL,
    text        TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_requests_requester ON ledger_requests (requester, created_at);

CREATE TABLE IF NOT EXISTS ledger_approvals (
    id          TEXT PRIMARY KEY NOT NULL,
    request_id  TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    repository  TEXT NOT NULL,
    pr_number   INTEGER NOT NULL,
    head_sha    TEXT NOT NULL,
    scope       TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_approvals_request ON ledger_approvals (request_id);
CREATE INDEX IF NOT EXISTS ledger_approvals_order ON ledger_approvals (approved_at, id);

-- At most one authority per approval (the claim is one-time) and per attempt.
CREATE TABLE IF NOT EXISTS ledger_authorities (
    id          TEXT PRIMARY KEY NOT NULL,
    approval_id TEXT NOT NULL UNIQUE,
    request_id  TEXT NOT NULL,
    attempt_id  TEXT NOT NULL UNIQUE,
    hub_id      TEXT NOT NULL,
    issued_at   TEXT NOT NULL
);

-- One result per attempt; later reports of the same attempt only count as duplicates.
CREATE TABLE IF NOT EXISTS ledger_results (
    attempt_id   TEXT PRIMARY KEY NOT NULL,
    authority_id TEXT NOT NULL UNIQUE,
    outcome      TEXT NOT NULL,
    evidence     TEXT NOT NULL,
    reported_at  TEXT NOT NULL,
    duplicates   INTEGER NOT NULL DEFAULT 0
);
