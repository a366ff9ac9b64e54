-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Acquire a free name, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- 'now' is fixed for the whole statement, so every NOW below is the same instant.
-- A lease held by someone else is never taken here, however expired it looks by the wall
-- clock (clocks step): a waiter that has seen it unchanged for its TTL drops it first
-- (drop_stale_lease). Free rows (owner '': force-released) are taken at once.
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is free, so it reports granted = 0 and blocks nobody.
-- Not granted: no row comes back; the caller reads the current one with inspect_lock (in
-- process, no round trip).
-- Columns: token, hold_count, granted, created_free_row (0 here), lease_seq, ttl_ms, mine (as
-- granted: a row that is not granted does not come back), queue_busy (0: no server-side
-- queue here; $7, whether to defer to one, only appears so that the statement takes 7
-- parameters), deferred (0: a held-back grant returns no row), server clock.
-- $8, $9: sqlock's own locks whose holders go first (a semaphore's queue, a shared mutex's
-- writer gate; NULL: none): while either is held, a new grant is not attempted; as when the
-- lock is held, no row comes back, and the caller asks which (waiters_check, in process).
INSERT INTO {locks} AS l
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at, lease_seq,
     ttl_ms)
SELECT $1, CASE WHEN $6 IS NULL THEN $2 ELSE '' END, $4, $5, 'unique_key',
       (SELECT value + 1 FROM {token_counter} WHERE id = 1), 1,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + CASE WHEN $6 IS NULL THEN $3 ELSE 0 END, 1, $3
WHERE $6 IS NOT NULL
   OR NOT EXISTS (SELECT 1 FROM {locks} WHERE name IN ($8, $9) AND owner <> '')
ON CONFLICT (name) DO UPDATE SET
    owner       = $2,
    host        = excluded.host,
    pid         = excluded.pid,
    strategy    = excluded.strategy,
    token       = CASE WHEN $6 IS NULL THEN excluded.token ELSE l.token END,
    hold_count  = CASE WHEN $6 IS NULL THEN 1 ELSE l.hold_count + 1 END,
    acquired_at = CASE WHEN $6 IS NULL THEN excluded.acquired_at ELSE l.acquired_at END,
    expires_at  = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3,
    lease_seq   = l.lease_seq + 1,
    ttl_ms      = $3
WHERE ($6 IS NULL AND l.owner = '' AND l.strategy <> 'select_for_update')
   OR ($6 IS NOT NULL AND l.owner = $2 AND l.token = $6)
RETURNING token, hold_count, owner = $2 AS granted, 0 AS created_free_row, lease_seq, ttl_ms,
          owner = $2 AS mine, 0 * $7 AS queue_busy, 0 AS deferred,
          CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS server_clock_ms
