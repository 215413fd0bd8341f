-- Remembered facts, mirroring migrations/sqlite/0003_facts.sql: short texts an owner asked to
-- keep, shown to the model each round. `created_at` (RFC 3339 TEXT, fixed width) gives the
-- order users see.

CREATE TABLE IF NOT EXISTS facts (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    owner_id   TEXT NOT NULL,
    text       TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_owner ON facts (owner_id, created_at);
