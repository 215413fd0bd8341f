-- Bearer tokens of Steward's MCP endpoint, mirroring migrations/sqlite/0006_mcp_tokens.sql.
-- Only the SHA-256 of a token (lowercase hex) is kept: the secret is shown once when the token
-- is made and never stored. `scopes` is a comma list (`read`, `read,submit`). Timestamps are
-- RFC 3339 TEXT; a token is revoked when `revoked_at` is set, and never deleted.

CREATE TABLE IF NOT EXISTS mcp_tokens (
    id           TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    owner_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);
CREATE INDEX IF NOT EXISTS mcp_tokens_owner ON mcp_tokens (owner_id, created_at);
