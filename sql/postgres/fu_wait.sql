-- Server-side wait for the row lock: lock_timeout in ms (0 = wait forever). NOWAIT is used for
-- "do not wait" (-1). Sent first in the pipeline of every acquire (so free), and local to that
-- pipeline's transaction (a BEGIN later in it makes that transaction the lock's): it ends with
-- it, so a session that goes back to the pool (PostgreSQL pools its lock sessions and queue
-- seats) carries no lock timeout into other statements.
SELECT set_config('lock_timeout', GREATEST($1::bigint, 0)::text, true)
