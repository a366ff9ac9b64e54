-- After a failed uk_queue_enter: give up this name's queue lock if this session holds it
-- (RELEASE_LOCK of a lock not held returns 0 or NULL, quietly). GET_LOCK's timeout cannot
-- grant and fail at once as PostgreSQL's lock_timeout can; this is for symmetry.
SELECT CAST(COALESCE(RELEASE_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                       64)), 0) AS SIGNED)
