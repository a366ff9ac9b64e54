-- Re-entry: compare-and-set on our version; the lease is extended (lease_seq moves forward),
-- the version kept. Not checked against the wall clock (see renew_lease).
UPDATE {locks} SET hold_count = hold_count + 1, expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3,
                   lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND owner = $2 AND token = $4
RETURNING token
