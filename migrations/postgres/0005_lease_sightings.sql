-- sqlock schema v5 (PostgreSQL): takeover that no clock step can break.
-- A lease (unique_key, optimistic_version) held by someone else is taken over only after the
-- waiter has seen it unchanged for the holder's whole TTL on its own monotonic clock; the
-- database's wall clock (expires_at) no longer decides takeover. Every statement that extends a
-- lease (acquire, re-entry, renewal) moves lease_seq forward, so "unchanged" is (token,
-- lease_seq); ttl_ms is the holder's TTL, which the waiter must wait out.
ALTER TABLE {locks} ADD COLUMN IF NOT EXISTS lease_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE {locks} ADD COLUMN IF NOT EXISTS ttl_ms bigint NOT NULL DEFAULT 0;

-- Steps of the database server's clock that sqlock processes noticed (the server's time moved
-- differently from their monotonic clocks between two round trips), for `sqlock status`.
CREATE TABLE IF NOT EXISTS {clock_steps} (
    id       bigserial PRIMARY KEY,
    seen_at  timestamptz NOT NULL DEFAULT statement_timestamp(),
    observer text NOT NULL,
    step_ms  bigint NOT NULL
);
