-- Re-entry: compare-and-set on our version; the lease is extended (lease_seq moves forward),
-- the version kept. Not checked against the server's clock (see renew_lease). The outcome is
-- read back with ov_read:
-- sqlock: read-back
UPDATE {locks}
SET hold_count = hold_count + 1, expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND,
    lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND owner = $2 AND token = $4
