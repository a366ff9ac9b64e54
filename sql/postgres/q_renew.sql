-- quorum: renews our row on this member (owner and token checked); moves its version, which
-- tells waiters the holder is alive. The token when renewed; no row when it is not ours.
UPDATE {quorum}
SET ttl_ms = $4::bigint, version = version + 1,
    expires_at = statement_timestamp() + $4::bigint * interval '1 millisecond'
WHERE name = $1::text AND owner = $2::text AND token = $3::bigint
RETURNING token
