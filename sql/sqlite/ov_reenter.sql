-- Re-entry: compare-and-set on our version; the lease is extended, the version kept.
UPDATE {locks} SET hold_count = hold_count + 1, expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3
WHERE name = $1 AND owner = $2 AND token = $4 AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
RETURNING token
