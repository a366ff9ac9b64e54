-- Re-entry: compare-and-set on our version; the lease is extended (lease_seq moves forward),
-- the version kept. Not checked against the server's clock (see renew_lease).
UPDATE {locks}
SET hold_count = hold_count + 1,
    expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond',
    lease_seq = lease_seq + 1, ttl_ms = $3::bigint
WHERE name = $1::text AND owner = $2::text AND token = $4::bigint
RETURNING token
