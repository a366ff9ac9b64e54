-- quorum, round 2: the guarded write. Accepted only when token $2 is above every token this
-- member accepted before (any two majorities share a member, so tokens rise across quorum
-- grants) and the row is free, already ours, or a holder's row the caller has seen unchanged
-- (version $7) for the holder's TTL. The token when accepted; no row otherwise.
UPDATE {quorum}
SET token = $2, owner = $3, host = $5, pid = $6, ttl_ms = $4, version = version + 1,
    acquired_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
    expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $4
WHERE name = $1 AND token < $2 AND (owner = '' OR owner = $3 OR version = $7)
RETURNING token
