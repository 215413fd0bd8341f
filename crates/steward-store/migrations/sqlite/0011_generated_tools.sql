-- Tools the agent wrote for itself (SPEC G), versioned per owner and name: `version` 1, 2, …
-- `body` is the whole record as JSON (source, description, input schema, source hash, who
-- approved it). A removed version keeps its row with `removed_at` set, so its number is never
-- given again and the audit log's references stay readable.

CREATE TABLE IF NOT EXISTS generated_tools (
    owner_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    removed_at TEXT,
    body       TEXT NOT NULL,
    PRIMARY KEY (owner_id, name, version)
);
