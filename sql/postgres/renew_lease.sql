-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked. Not checked
-- against this server's clock: a lease is ours until someone who saw it unchanged for its TTL
-- dropped it (which changes or deletes the row), so a clock step cannot refuse a renewal.
-- lease_seq moves forward: waiters watching the lease start their wait again.
UPDATE {locks} SET expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond',
                   lease_seq = lease_seq + 1, ttl_ms = $3::bigint
WHERE name = $1::text AND owner = $2::text AND token = $4::bigint
RETURNING token, CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint)
