-- Held leases that look expired by the database clock for longer than the grace ($2 ms), at
-- most $1: the reaper watches them and drops those it sees unchanged for their TTL
-- (drop_stale_lease). Columns: name, token, lease_seq, ttl_ms.
SELECT name, token, lease_seq, ttl_ms FROM {locks}
WHERE owner <> '' AND strategy <> 'select_for_update'
  AND expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
ORDER BY expires_at LIMIT $1::bigint
