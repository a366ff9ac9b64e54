-- sqlock schema v9 (SQLite): the table of quorum locks (sqlock::quorum_mutex), one per member
-- database of a quorum (a SQLite member only where every contender shares its host). A row per
-- name keeps the highest fencing token this member accepted: it is never lowered, and neither
-- the reaper nor a release deletes the row, so any later majority sees it (docs:
-- guides/quorum.md). owner '' is free. version moves with every change: a waiter takes over a
-- row only once it has seen the same version for the holder's ttl_ms on its own steady clock.
-- acquired_at/expires_at (ms since 1970) are for operators; no decision reads them.
-- Additive: older libraries never read this table.
-- sqlock: compatible-from 8
CREATE TABLE IF NOT EXISTS {quorum} (
    name        TEXT NOT NULL PRIMARY KEY CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 255),
    token       INTEGER NOT NULL DEFAULT 0,
    owner       TEXT NOT NULL DEFAULT '',
    host        TEXT NOT NULL DEFAULT '',
    pid         INTEGER NOT NULL DEFAULT 0,
    ttl_ms      INTEGER NOT NULL DEFAULT 0,
    version     INTEGER NOT NULL DEFAULT 0,
    acquired_at INTEGER NULL,
    expires_at  INTEGER NULL
);
