-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Columns: token (the version), owner, hold_count, held (someone owns it), lease_seq, ttl_ms,
-- queue_busy: another session holds this name's queue lock (uk_queue_enter: someone waits in
-- line) or waits for it, so a lock() that may queue defers to it. Asked with a try of the same
-- advisory lock at transaction level (the lock manager, no pg_locks scan; released when this
-- autocommit statement ends; the queue's own holder, on its seat, gets it: its lock is ours).
-- Without it a releaser asking again at once won the race against the head, woken by NOTIFY
-- (a waiter was not granted within 3 s in 1 run of 8). deferred: which of sqlock's own locks $2, $3
-- (a semaphore's queue, a shared mutex's writer gate; NULL: none) someone holds (1: $2, 2: $3),
-- so that a permit is not taken past them without another round trip.
SELECT token, owner, hold_count, CAST(owner <> '' AS integer) AS held, lease_seq, ttl_ms,
       CASE WHEN pg_try_advisory_xact_lock(1936483696, hashtext('{channel}/' || $1::text))
            THEN 0 ELSE 1 END AS queue_busy,
       CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $2::text AND owner <> '') AS integer)
           + 2 * CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $3::text AND owner <> '')
                      AS integer) AS deferred,
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint) AS server_clock_ms
FROM {locks} WHERE name = $1::text
