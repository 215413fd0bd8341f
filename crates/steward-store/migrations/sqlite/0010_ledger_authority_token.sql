-- The bearer token that claimed each authority (its id, never its secret): only the same token
-- may report the authority's result or learn, from a later claim, which attempt holds it.
-- Authorities issued before this column existed keep '' and take no result report.

ALTER TABLE ledger_authorities ADD COLUMN token_id TEXT NOT NULL DEFAULT '';
