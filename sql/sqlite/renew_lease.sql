-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked. Not checked
-- against the wall clock: a lease is ours until someone who saw it unchanged for its TTL
-- dropped it (which deletes the row), so a clock step cannot refuse a renewal. lease_seq moves
-- forward: waiters watching the lease start their wait again.
UPDATE {locks} SET expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3, lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND owner = $2 AND token = $4
RETURNING token, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
