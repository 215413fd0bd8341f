-- Leases of running runs, mirroring migrations/postgres/0009_leases.sql. An embedded database
-- lives on one machine, whose crash recovery judges process ids, so the SQLite store keeps no
-- leases: the table exists so that both schemas have the same tables. `expires_at` would be
-- RFC 3339 TEXT.

CREATE TABLE IF NOT EXISTS run_leases (
    run_id     TEXT PRIMARY KEY NOT NULL,
    node       TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
