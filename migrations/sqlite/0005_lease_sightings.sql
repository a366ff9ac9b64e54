-- sqlock schema v5 (SQLite): takeover that no clock step can break.
-- A lease (unique_key, optimistic_version) held by someone else is taken over only after the
-- waiter has seen it unchanged for the holder's whole TTL on its own monotonic clock; the
-- wall clock (expires_at) no longer decides takeover. Every statement that extends a lease
-- (acquire, re-entry, renewal) moves lease_seq forward, so "unchanged" is (token, lease_seq);
-- ttl_ms is the holder's TTL, which the waiter must wait out.
ALTER TABLE {locks} ADD COLUMN lease_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {locks} ADD COLUMN ttl_ms INTEGER NOT NULL DEFAULT 0;

-- Steps of the wall clock that sqlock processes noticed, for `sqlock status`.
CREATE TABLE IF NOT EXISTS {clock_steps} (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    seen_at  INTEGER NOT NULL,
    observer TEXT NOT NULL,
    step_ms  INTEGER NOT NULL
);
