-- sqlock schema v9 (PostgreSQL): the table of quorum locks (sqlock::quorum_mutex), one per member
-- database of a quorum. A row per name keeps the highest fencing token this member accepted: it
-- is never lowered, and neither the reaper nor a release deletes the row, so any later majority
-- sees it (docs: guides/quorum.md). owner '' is free. version moves with every change: a waiter
-- takes over a row only once it has seen the same version for the holder's ttl_ms on its own
-- steady clock. acquired_at/expires_at are for operators; no decision reads them.
-- Additive: older libraries never read this table.
-- sqlock: compatible-from 8
CREATE TABLE IF NOT EXISTS {quorum} (
    name        text COLLATE "C" NOT NULL PRIMARY KEY
                CHECK (octet_length(name) BETWEEN 1 AND 255),
    token       bigint NOT NULL DEFAULT 0,
    owner       text NOT NULL DEFAULT '',
    host        text NOT NULL DEFAULT '',
    pid         bigint NOT NULL DEFAULT 0,
    ttl_ms      bigint NOT NULL DEFAULT 0,
    version     bigint NOT NULL DEFAULT 0,
    acquired_at timestamptz NULL,
    expires_at  timestamptz NULL
);
