-- Re-entry: compare-and-set on our version; the lease is extended, the version kept.
UPDATE {locks}
SET hold_count = hold_count + 1,
    expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond'
WHERE name = $1::text AND owner = $2::text AND token = $4::bigint
  AND expires_at > statement_timestamp()
RETURNING token
