-- Rollback records (compensating actions of writing tool calls) and remembered approval
-- grants, mirroring migrations/sqlite/0002_rollbacks_grants.sql. Each row keeps its record as
-- JSON in `body`; the other columns exist for lookups.

CREATE TABLE IF NOT EXISTS rollbacks (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rollbacks_run ON rollbacks (run_id, created_at);

CREATE TABLE IF NOT EXISTS grants (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    owner_id   TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS grants_owner ON grants (owner_id, created_at);
