-- quorum: renews our row on this member (owner and token checked); moves its version, which
-- tells waiters the holder is alive. No RETURNING here: one affected row means renewed (the
-- version always moves).
-- sqlock: read-back
UPDATE {quorum}
SET ttl_ms = $4, version = version + 1,
    expires_at = UTC_TIMESTAMP(6) + INTERVAL ($4 * 1000) MICROSECOND
WHERE name = $1 AND owner = $2 AND token = $3
