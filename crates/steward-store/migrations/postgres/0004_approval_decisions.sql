-- Decisions on approval requests made by another process than the one running the call,
-- mirroring migrations/sqlite/0004_approval_decisions.sql. The first decision per approval
-- wins; the running process reads it, checks owner and expiry, and answers with its own token.

CREATE TABLE IF NOT EXISTS approval_decisions (
    approval_id TEXT PRIMARY KEY NOT NULL,
    run_id      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    body        TEXT NOT NULL
);
