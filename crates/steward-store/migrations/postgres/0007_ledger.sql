-- The work ledger (SPEC H1, H2), mirroring migrations/sqlite/0007_ledger.sql: work requests,
-- the owner's approvals pinned to what they were given for, the one-time authorities issued to
-- hubs, and the results hubs report. Timestamps are RFC 3339 TEXT (fixed width, compared in
-- byte order with COLLATE "C"); evidence is JSON TEXT. Nothing here is ever deleted.

CREATE TABLE IF NOT EXISTS ledger_requests (
    id          TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    revision    BIGINT NOT NULL,
    epoch       BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    requester   TEXT NOT NULL,
    repository  TEXT NOT NULL,
    pr_number   BIGINT NOT NULL,
    text        TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_requests_requester ON ledger_requests (requester, created_at);

CREATE TABLE IF NOT EXISTS ledger_approvals (
    id          TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    request_id  TEXT NOT NULL,
    revision    BIGINT NOT NULL,
    epoch       BIGINT NOT NULL,
    repository  TEXT NOT NULL,
    pr_number   BIGINT NOT NULL,
    head_sha    TEXT NOT NULL,
    scope       TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_at TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_approvals_request ON ledger_approvals (request_id);
CREATE INDEX IF NOT EXISTS ledger_approvals_order ON ledger_approvals (approved_at, id);

-- At most one authority per approval (the claim is one-time) and per attempt.
CREATE TABLE IF NOT EXISTS ledger_authorities (
    id          TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    approval_id TEXT NOT NULL UNIQUE,
    request_id  TEXT NOT NULL,
    attempt_id  TEXT NOT NULL UNIQUE,
    hub_id      TEXT NOT NULL,
    issued_at   TEXT COLLATE "C" NOT NULL
);

-- One result per attempt; later reports of the same attempt only count as duplicates.
CREATE TABLE IF NOT EXISTS ledger_results (
    attempt_id   TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    authority_id TEXT NOT NULL UNIQUE,
    outcome      TEXT NOT NULL,
    evidence     TEXT NOT NULL,
    reported_at  TEXT COLLATE "C" NOT NULL,
    duplicates   BIGINT NOT NULL DEFAULT 0
);
