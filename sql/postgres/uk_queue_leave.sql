-- Give up this name's queue lock (uk_queue_enter): the next waiter in the server's queue gets
-- it. Sent after the release has committed, in the same pipeline.
SELECT CAST(pg_advisory_unlock(1936483696, hashtext('{channel}/' || $1::text)) AS integer)
