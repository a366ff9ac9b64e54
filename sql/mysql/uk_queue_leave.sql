-- Give up this name's queue lock (uk_queue_enter): the server grants it to the next waiter.
-- Sent after the release has committed (the seat runs autocommit statements).
SELECT CAST(COALESCE(RELEASE_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                       64)), 0) AS SIGNED)
