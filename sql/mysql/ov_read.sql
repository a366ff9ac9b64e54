-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- optimistic_version, step 1: the row's version (token), holder, whether someone holds it,
-- and what a waiter watches (lease_seq, ttl_ms); queue_busy: another session holds this name's
-- queue lock (uk_queue_enter: someone waits in line), so a lock() that may queue defers to it;
-- deferred: which of sqlock's own locks $2, $3 (a semaphore's queue, a shared mutex's writer
-- gate; NULL: none) someone holds (1: $2, 2: $3), so that a permit is not taken past them
-- without another round trip.
SELECT token, owner, hold_count, CAST(owner <> '' AS SIGNED) AS held, lease_seq, ttl_ms,
       CAST(COALESCE(IS_USED_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                       64)) <> CONNECTION_ID(), 0) AS SIGNED) AS queue_busy,
       EXISTS (SELECT 1 FROM {locks} WHERE name = $2 AND owner <> '')
           + 2 * EXISTS (SELECT 1 FROM {locks} WHERE name = $3 AND owner <> '') AS deferred,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
           AS server_clock_ms
FROM {locks} WHERE name = $1
