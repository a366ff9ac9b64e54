-- Acquire, take over an expired lease, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- ON DUPLICATE KEY UPDATE assigns left to right and later assignments see earlier ones, so
-- every condition reads only columns not yet assigned: token, owner and expires_at go last.
-- Success is read back through RETURNING (never from the affected-row count).
INSERT INTO {locks}
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, $2, $4, $5, 'unique_key', NEXTVAL({token_seq}), 1,
        UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND)
ON DUPLICATE KEY UPDATE
    hold_count  = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), 1,
                     IF($6 IS NOT NULL AND owner = VALUES(owner) AND token = $6
                        AND expires_at > UTC_TIMESTAMP(6), hold_count + 1, hold_count)),
    host        = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(host), host),
    pid         = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(pid), pid),
    strategy    = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(strategy), strategy),
    acquired_at = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(acquired_at), acquired_at),
    token       = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(token), token),
    owner       = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(owner), owner),
    expires_at  = IF(($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6))
                     OR ($6 IS NOT NULL AND owner = VALUES(owner) AND token = $6
                         AND expires_at > UTC_TIMESTAMP(6)),
                     VALUES(expires_at), expires_at)
RETURNING token, hold_count,
    COALESCE(owner = $2 AND expires_at > UTC_TIMESTAMP(6)
             AND (acquired_at = UTC_TIMESTAMP(6) OR token = $6), 0)
