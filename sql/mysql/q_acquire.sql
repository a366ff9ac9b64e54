-- quorum, round 2: the guarded write. Accepted only when token $2 is above every token this
-- member accepted before (any two majorities share a member, so tokens rise across quorum
-- grants) and the row is free, already ours, or a holder's row the caller has seen unchanged
-- (version $7) for the holder's TTL. MariaDB has no UPDATE ... RETURNING: the affected rows
-- tell the outcome (the write always moves version, so the row changes exactly when accepted).
-- sqlock: read-back
UPDATE {quorum}
SET owner = $3, host = $5, pid = $6, ttl_ms = $4, version = version + 1,
    acquired_at = UTC_TIMESTAMP(6),
    expires_at = UTC_TIMESTAMP(6) + INTERVAL ($4 * 1000) MICROSECOND, token = $2
WHERE name = $1 AND token < $2 AND (owner = '' OR owner = $3 OR version = $7)
