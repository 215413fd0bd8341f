-- Long-lived conversations of the web UI: each row keeps its record (owner, workspace, the
-- runs of its turns, when it ended) as JSON in `body`; `owner_id` is for lookups.

CREATE TABLE IF NOT EXISTS conversations (
    id         TEXT PRIMARY KEY NOT NULL,
    owner_id   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner_id, created_at);
