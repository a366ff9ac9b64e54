-- Acquire, take over an expired lease, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is born expired, so it reports granted = 0 and blocks nobody.
-- ON DUPLICATE KEY UPDATE assigns left to right and later assignments see earlier ones, so
-- conditions read only columns not yet assigned; the one exception, expires_at's re-entry
-- test, reads token and owner, which change only when $6 IS NULL.
-- Success is read back through RETURNING (never from the affected-row count).
-- Token order: the token is drawn only in the UPDATE branch, i.e. after the row is locked, so
-- grants of one name get increasing tokens. The INSERT branch therefore never grants: it
-- creates a free row (token 0, already expired) and returns granted = 0 with an empty owner,
-- and the caller repeats the statement at once. Releases keep the row (release_lease marks it
-- free), so only a name's first use, or its first use after reaping, costs that extra trip.
INSERT INTO {locks}
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, '', $4, $5, 'unique_key', 0, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
    hold_count  = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), 1,
                     IF($6 IS NOT NULL AND owner = $2 AND token = $6
                        AND expires_at > UTC_TIMESTAMP(6), hold_count + 1, hold_count)),
    host        = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(host), host),
    pid         = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(pid), pid),
    strategy    = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(strategy), strategy),
    acquired_at = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), VALUES(acquired_at), acquired_at),
    token       = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), NEXTVAL({token_seq}), token),
    owner       = IF($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6), $2, owner),
    expires_at  = IF(($6 IS NULL AND expires_at <= UTC_TIMESTAMP(6))
                     OR ($6 IS NOT NULL AND owner = $2 AND token = $6
                         AND expires_at > UTC_TIMESTAMP(6)),
                     UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND, expires_at)
RETURNING token, hold_count,
    COALESCE(owner = $2 AND expires_at > UTC_TIMESTAMP(6)
             AND (acquired_at = UTC_TIMESTAMP(6) OR token = $6), 0),
    owner = ''
