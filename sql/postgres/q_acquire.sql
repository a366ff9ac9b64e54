-- quorum, round 2: the guarded write. Accepted only when token $2 is above every token this
-- member accepted before (any two majorities share a member, so tokens rise across quorum
-- grants) and the row is free, already ours, or a holder's row the caller has seen unchanged
-- (version $7) for the holder's TTL. The token when accepted; no row otherwise.
UPDATE {quorum}
SET token = $2::bigint, owner = $3::text, host = $5::text, pid = $6::bigint, ttl_ms = $4::bigint,
    version = version + 1, acquired_at = statement_timestamp(),
    expires_at = statement_timestamp() + $4::bigint * interval '1 millisecond'
WHERE name = $1::text AND token < $2::bigint
  AND (owner = '' OR owner = $3::text OR version = $7::bigint)
RETURNING token
