-- Re-entry: compare-and-set on our version; the lease is extended, the version kept. The
-- outcome is read back with ov_read:
-- sqlock: read-back
UPDATE {locks}
SET hold_count = hold_count + 1, expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND
WHERE name = $1 AND owner = $2 AND token = $4 AND expires_at > UTC_TIMESTAMP(6)
