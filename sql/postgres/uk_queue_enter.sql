-- unique_key waiters queue in the server: take this name's queue lock (a session-level
-- advisory lock, keys (1936483696, hash of "<table prefix>release/<name>", so that lock tables
-- with different prefixes in one database never share a queue; 1936483695 is
-- acquire_unique_key's grants lock), waiting at most lock_timeout (uk_queue_wait, sent just
-- before). Its holder is the lease's holder or the next in line; a release gives it up after committing, so the server
-- hands the lock straight to the next waiter, whose acquire_unique_key follows in the same
-- pipeline. It orders waiters and nothing else: the lease row is the lock.
-- Returns waited = 1 when someone else had it (the lock is contended), 0 when it was free, and
-- turn = 1 (not our turn within lock_timeout is an error here, 55P03). $2, the longest wait in
-- ms, is for backends whose lock function takes it (MariaDB's GET_LOCK); here it only comes
-- back as the third column, since the wait is lock_timeout.
SELECT CASE WHEN pg_try_advisory_lock(1936483696, hashtext('{channel}/' || $1::text)) THEN 0
            ELSE (SELECT 1 FROM (SELECT pg_advisory_lock(1936483696, hashtext('{channel}/' || $1::text))) AS w)
       END AS waited, 1 AS turn, $2::bigint AS wait_ms
