-- Steward store schema, version 1 (PostgreSQL), mirroring migrations/sqlite/0001_initial.sql.
-- Timestamps are RFC 3339 TEXT (UTC, 9 fractional digits, `Z`) exactly as in SQLite, so the
-- audit hash input and the sort order are identical; columns that order results use the "C"
-- collation (byte order, like SQLite's BINARY). JSON is TEXT, integers are 64-bit.

CREATE TABLE IF NOT EXISTS runs (
    id            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    owner_id      TEXT NOT NULL,
    task          TEXT NOT NULL,
    planner       TEXT NOT NULL,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    status        TEXT NOT NULL,
    stop_reason   TEXT,
    final_text    TEXT,
    error_class   TEXT,
    error         TEXT,
    created_at    TEXT COLLATE "C" NOT NULL,
    finished_at   TEXT,
    rounds        BIGINT NOT NULL,
    tool_calls    BIGINT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    pid           BIGINT NOT NULL,
    -- The node (host) whose process executes the run: `pid` is only meaningful there. Set when
    -- the run is inserted, never changed by updates. Not part of the SQLite schema (one machine).
    node          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_created_at ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at);

CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq    BIGINT NOT NULL,
    at     TEXT NOT NULL,
    name   TEXT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE IF NOT EXISTS approvals (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    tool       TEXT NOT NULL,
    arguments  TEXT NOT NULL,
    reason     TEXT NOT NULL,
    rule       TEXT NOT NULL,
    risk       DOUBLE PRECISION NOT NULL,
    preview    TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT NOT NULL,
    status     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_run ON approvals (run_id, created_at);

CREATE TABLE IF NOT EXISTS audit (
    seq            BIGINT PRIMARY KEY NOT NULL,
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
CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id, seq);

-- One row whose lock serialises appends to the audit chain across connections, processes and
-- nodes: every transaction that appends takes `SELECT … FOR UPDATE` on it first, then reads the
-- chain head. Not part of the SQLite schema (its write lock covers the whole file).
CREATE TABLE IF NOT EXISTS audit_chain_lock (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1)
);
INSERT INTO audit_chain_lock (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
