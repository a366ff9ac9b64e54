-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Acquire a free name, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- statement_timestamp(), not now(): the lease is computed from this statement's time.
-- A lease held by someone else is never taken here, however expired it looks by this server's
-- clock (clocks step): a waiter that has seen it unchanged for its TTL drops it first
-- (drop_stale_lease). Free rows (owner '': force-released) are taken at once.
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is free, so it reports granted = 0 and blocks nobody.
-- Not granted: the current row comes back instead (token, lease_seq, ttl_ms: what the waiter
-- watches), from the statement's snapshot.
-- Token order: grants of one name are serialised by a transaction-level advisory lock taken
-- before nextval() runs (the subquery is evaluated first). Without it, an INSERT that drew its
-- token and then waited (on a releasing DELETE, or the scheduler) could be granted after a
-- later grant with a larger token. Keys: (1936483695 = 'sqlk', hash of the name).
-- Columns: token, hold_count, granted, created_free_row (0 here), lease_seq, ttl_ms, mine (the
-- row's owner is $2: not granted, it is an earlier attempt's grant whose reply was lost),
-- queue_busy (0 here: reading pg_locks costs more than an acquire; a queued waiter is woken by
-- the release's NOTIFY instead), deferred (above), server clock. $7 (defer to a queued waiter: MariaDB holds a
-- new grant back while another session holds the name's queue lock) is not looked at here for
-- the same reason; it only appears, multiplied by 0, so that the statement takes 7 parameters.
-- $8, $9: sqlock's own locks whose holders go first (a semaphore's queue, a shared mutex's
-- writer gate; NULL: none): while either is held, a new grant is not attempted at all and the
-- column "deferred" says which (1: $8, 2: $9, 3: both). Same statement, so an uncontended
-- permit costs one round trip; all its parts read one snapshot, so the check that held the
-- grant back and the column that reports it agree. No row at all (the lock row does not exist
-- yet) leaves the caller to ask (waiters_check).
WITH attempt AS (
    INSERT INTO {locks} AS l
        (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at,
         lease_seq, ttl_ms)
    SELECT $1::text, CASE WHEN $6::bigint IS NULL THEN $2::text ELSE '' END, $4::text,
           $5::bigint, 'unique_key', nextval('{token_seq}'), 1, statement_timestamp(),
           CASE WHEN $6::bigint IS NULL
                THEN statement_timestamp() + $3::bigint * interval '1 millisecond'
                ELSE statement_timestamp() END,
           1, $3::bigint
    FROM (SELECT pg_advisory_xact_lock(1936483695, hashtext($1::text))) AS grants_of_this_name
    WHERE $6::bigint IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM {locks} WHERE name IN ($8::text, $9::text) AND owner <> '')
    ON CONFLICT (name) DO UPDATE SET
        owner       = $2::text,
        host        = excluded.host,
        pid         = excluded.pid,
        strategy    = excluded.strategy,
        token       = CASE WHEN $6::bigint IS NULL THEN excluded.token ELSE l.token END,
        hold_count  = CASE WHEN $6::bigint IS NULL THEN 1 ELSE l.hold_count + 1 END,
        acquired_at = CASE WHEN $6::bigint IS NULL THEN excluded.acquired_at ELSE l.acquired_at END,
        expires_at  = statement_timestamp() + $3::bigint * interval '1 millisecond',
        lease_seq   = l.lease_seq + 1,
        ttl_ms      = $3::bigint
    WHERE ($6::bigint IS NULL AND l.owner = '' AND l.strategy <> 'select_for_update')
       OR ($6::bigint IS NOT NULL AND l.owner = $2::text AND l.token = $6::bigint)
    RETURNING token, hold_count, CAST(owner = $2::text AS integer) AS granted, lease_seq, ttl_ms
)
SELECT token, hold_count, granted, 0 AS created_free_row, lease_seq, ttl_ms, granted AS mine,
       0 * $7::integer AS queue_busy, 0 AS deferred,
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint) AS server_clock_ms
FROM attempt
UNION ALL
SELECT token, hold_count, 0, 0, lease_seq, ttl_ms, CAST(owner = $2::text AS integer),
       0 * $7::integer,
       CASE WHEN $6::bigint IS NULL
            THEN CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $8::text AND owner <> '')
                      AS integer)
                 + 2 * CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $9::text AND owner <> '')
                            AS integer)
            ELSE 0 END,
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint)
FROM {locks}
WHERE name = $1::text AND NOT EXISTS (SELECT 1 FROM attempt)
