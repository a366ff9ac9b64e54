-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked, and only while
-- the lease is live.
UPDATE {locks} SET expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3
WHERE name = $1 AND owner = $2 AND token = $4 AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
RETURNING token
