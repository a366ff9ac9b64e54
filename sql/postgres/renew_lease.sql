-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked, and only while
-- the lease is live (a lapsed lease is lost, never revived).
UPDATE {locks} SET expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond'
WHERE name = $1::text AND owner = $2::text AND token = $4::bigint
  AND expires_at > statement_timestamp()
RETURNING token
