-- Held leases that look expired by the wall clock for longer than the grace ($2 ms), at most
-- $1: the reaper watches them and drops those it sees unchanged for their TTL
-- (drop_stale_lease). Columns: name, token, lease_seq, ttl_ms.
SELECT name, token, lease_seq, ttl_ms FROM {locks}
WHERE owner <> '' AND strategy <> 'select_for_update' AND expires_at < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $2
ORDER BY expires_at LIMIT $1
