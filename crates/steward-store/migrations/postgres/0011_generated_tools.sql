-- Tools the agent wrote for itself, mirroring migrations/sqlite/0011_generated_tools.sql:
-- versioned per owner and name, `body` the whole record as JSON, a removed version kept with
-- `removed_at` set so its number is never given again.

CREATE TABLE IF NOT EXISTS generated_tools (
    owner_id   TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    version    BIGINT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    removed_at TEXT,
    body       TEXT NOT NULL,
    PRIMARY KEY (owner_id, name, version)
);
