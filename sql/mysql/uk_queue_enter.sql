-- unique_key waiters queue in the server: take this name's queue lock, a user-level lock
-- (GET_LOCK) named "{channel}/" followed by the SHA-256 (hex) of "{channel}/<name>", cut to
-- the 64 characters a lock name may have (at least 96 bits of the hash remain with the longest
-- table prefix). The prefix is in both, so lock tables with different prefixes in one server
-- never share a queue (user-lock names are case-insensitive; the hash is not). Its holder is
-- the lease's holder or the next in line; a release gives it up after committing
-- (uk_queue_leave), and the server grants it to the waiter that asked first (user-level locks
-- are metadata locks: waiters are granted in the order they came).
-- Waits at most $2 ms (GET_LOCK takes fractional seconds). The MariaDB backend does not
-- pipeline (one prepared statement at a time over Connector/C), so unlike PostgreSQL the
-- acquire is sent only after this returned turn = 1.
-- Columns: waited (1 when someone else had it: the lock is contended), turn (1: got it;
-- 0: not within $2 ms; NULL: interrupted, KILL QUERY).
SELECT CAST(IS_USED_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)), 64))
            IS NOT NULL AS SIGNED) AS waited,
       GET_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)), 64), $2 / 1000)
           AS turn
