-- quorum: renews our row on this member (owner and token checked); moves its version, which
-- tells waiters the holder is alive. The token when renewed; no row when it is not ours.
UPDATE {quorum}
SET ttl_ms = $4, version = version + 1,
    expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $4
WHERE name = $1 AND owner = $2 AND token = $3
RETURNING token
