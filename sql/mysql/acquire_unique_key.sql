-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Acquire a free name, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- $7 = 1: defer to the server-side queue (a lock() that may queue, before its queue wait ran
-- out): while another session holds this name's queue lock (uk_queue_enter: a waiter is in
-- line, or a release is passing the lock on) a new grant is not attempted at all, the
-- statement changes nothing and returns no row, and the caller queues behind. The queue lock's
-- holder itself (the acquire on its seat) and re-entries are never held back; $7 = 0 (try_lock,
-- or a waiter whose queue wait ran out, whose head may have stopped) takes a free lease
-- regardless.
-- $8, $9: sqlock's own locks whose holders go first (a semaphore's queue, a shared mutex's
-- writer gate; NULL: none): while another session's owner holds either, a new grant is not
-- attempted either and no row comes back; the caller asks which (waiters_check) only then, so
-- an uncontended permit costs one round trip. (READ COMMITTED: the look is a consistent read,
-- no row lock.)
-- A lease held by someone else is never taken here, however expired it looks by this server's
-- clock (clocks step): a waiter that has seen it unchanged for its TTL drops it first
-- (drop_stale_lease). Free rows (owner '': released, force-released, just created) are taken.
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is free, so it reports granted = 0 and blocks nobody.
-- ON DUPLICATE KEY UPDATE assigns left to right and later assignments see earlier ones, so
-- each condition reads only columns not yet assigned: owner last; strategy's assignment keeps
-- the "free" test true; token and lease_seq are not read by the conditions.
-- Success is read back through RETURNING (never from the affected-row count); RETURNING also
-- gives a waiter the current row (token, lease_seq, ttl_ms: what it watches).
-- Token order: the token is drawn only in the UPDATE branch, i.e. after the row is locked, so
-- grants of one name get increasing tokens. The INSERT branch therefore never grants: it
-- creates a free row (token 0) and returns granted = 0 with an empty owner, and the caller
-- repeats the statement at once. Releases keep the row (release_lease marks it free), so only a
-- name's first use, or its first use after reaping, costs that extra trip.
-- Columns: token, hold_count, granted, created_free_row, lease_seq, ttl_ms, mine (the row's
-- owner is $2: not granted, it is an earlier attempt's grant whose reply was lost),
-- queue_busy (another session holds this name's queue lock: with $7 = 0 a grant may have
-- passed a waiter, so the caller counts it as contended and queues first next time; 0 on
-- Galera, which has no user-level locks), deferred (0: a held-back grant returns no row),
-- server clock.
INSERT INTO {locks}
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at, lease_seq,
     ttl_ms)
SELECT $1, '', $4, $5, 'unique_key', 0, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 0, $3
FROM DUAL
WHERE ($7 = 0 OR $6 IS NOT NULL
       OR COALESCE(IS_USED_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                     64)),
                   CONNECTION_ID()) = CONNECTION_ID())
  AND ($6 IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM {locks} WHERE name IN ($8, $9) AND owner <> ''))
ON DUPLICATE KEY UPDATE
    hold_count  = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update', 1,
                     IF($6 IS NOT NULL AND owner = $2 AND token = $6, hold_count + 1,
                        hold_count)),
    host        = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update',
                     VALUES(host), host),
    pid         = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update',
                     VALUES(pid), pid),
    acquired_at = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update',
                     VALUES(acquired_at), acquired_at),
    lease_seq   = IF(($6 IS NULL AND owner = '' AND strategy <> 'select_for_update')
                     OR ($6 IS NOT NULL AND owner = $2 AND token = $6), lease_seq + 1, lease_seq),
    ttl_ms      = IF(($6 IS NULL AND owner = '' AND strategy <> 'select_for_update')
                     OR ($6 IS NOT NULL AND owner = $2 AND token = $6), $3, ttl_ms),
    expires_at  = IF(($6 IS NULL AND owner = '' AND strategy <> 'select_for_update')
                     OR ($6 IS NOT NULL AND owner = $2 AND token = $6),
                     UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND, expires_at),
    token       = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update',
                     NEXTVAL({token_seq}), token),
    strategy    = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update',
                     VALUES(strategy), strategy),
    owner       = IF($6 IS NULL AND owner = '' AND strategy <> 'select_for_update', $2, owner)
RETURNING token, hold_count,
    COALESCE(owner = $2 AND (acquired_at = UTC_TIMESTAMP(6) OR token = $6), 0) AS granted,
    owner = '' AS created_free_row, lease_seq, ttl_ms, COALESCE(owner = $2, 0) AS mine,
    CAST(IF(@@wsrep_on, 0,
            COALESCE(IS_USED_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                       64)) <> CONNECTION_ID(), 0)) AS SIGNED) AS queue_busy,
    0 AS deferred,
    TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS server_clock_ms
