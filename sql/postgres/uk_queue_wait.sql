-- How long uk_queue_enter may wait for the queue lock: lock_timeout in ms (0 = no limit), sent
-- just before it in the same pipeline (and with 0 just after it, so that the acquire behind it
-- waits without one). Local to that pipeline's transaction, like fu_wait: a seat that goes back
-- to the pool carries no lock timeout.
SELECT set_config('lock_timeout', GREATEST($1::bigint, 0)::text, true)
