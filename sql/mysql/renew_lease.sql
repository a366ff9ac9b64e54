-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked. Not checked
-- against this server's clock: a lease is ours until someone who saw it unchanged for its TTL
-- dropped it (which deletes the row), so a clock step cannot refuse a renewal. lease_seq moves
-- forward: waiters watching the lease start their wait again.
-- No UPDATE ... RETURNING on MariaDB, and affected-row counts depend on CLIENT_FOUND_ROWS, so
-- the outcome is read back with inspect_lock:
-- sqlock: read-back
UPDATE {locks} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND,
                   lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND owner = $2 AND token = $4
