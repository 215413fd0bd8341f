-- Leases of running runs (several nodes on one database, SPEC H3). The node executing a run
-- holds its lease and renews it every few seconds; a lease whose `expires_at` has passed
-- belongs to a node that stopped (crashed, lost its network), and another node takes the run
-- over for recovery (`SELECT … FOR UPDATE SKIP LOCKED`, so only one node does): it becomes
-- `interrupted` and nothing is re-executed. `expires_at` is read against the database clock
-- (`now()`), so the nodes' clocks need not agree.

CREATE TABLE IF NOT EXISTS run_leases (
    run_id     TEXT PRIMARY KEY NOT NULL,
    node       TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS run_leases_expires_at ON run_leases (expires_at);
