-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- optimistic_version, step 1: the row's version (token), holder, whether someone holds it,
-- and what a waiter watches (lease_seq, ttl_ms); queue_busy is 0 (SQLite's waiters queue in a
-- file, src/backends/sqlite/fair_queue.hpp, before they read); deferred: which of sqlock's own locks $2,
-- $3 (a semaphore's queue, a shared mutex's writer gate; NULL: none) someone holds (1: $2,
-- 2: $3).
SELECT token, owner, hold_count, owner <> '' AS held, lease_seq, ttl_ms, 0 AS queue_busy,
       EXISTS (SELECT 1 FROM {locks} WHERE name = $2 AND owner <> '')
           + 2 * EXISTS (SELECT 1 FROM {locks} WHERE name = $3 AND owner <> '') AS deferred,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS server_clock_ms
FROM {locks} WHERE name = $1
