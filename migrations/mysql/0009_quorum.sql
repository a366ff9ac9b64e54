-- sqlock schema v9 (MariaDB): the table of quorum locks (sqlock::quorum_mutex), one per member
-- database of a quorum. A row per name keeps the highest fencing token this member accepted: it
-- is never lowered, and neither the reaper nor a release deletes the row, so any later majority
-- sees it (docs: guides/quorum.md). owner '' is free. version moves with every change: a waiter
-- takes over a row only once it has seen the same version for the holder's ttl_ms on its own
-- steady clock. acquired_at/expires_at are for operators; no decision reads them.
-- Additive: older libraries never read this table.
-- sqlock: compatible-from 8
CREATE TABLE IF NOT EXISTS {quorum} (
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    token       BIGINT NOT NULL DEFAULT 0,
    owner       VARBINARY(255) NOT NULL DEFAULT '',
    host        VARCHAR(255) NOT NULL DEFAULT '',
    pid         BIGINT NOT NULL DEFAULT 0,
    ttl_ms      BIGINT NOT NULL DEFAULT 0,
    version     BIGINT NOT NULL DEFAULT 0,
    acquired_at DATETIME(6) NULL,
    expires_at  DATETIME(6) NULL
) ENGINE = InnoDB;
