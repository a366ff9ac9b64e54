-- Server-side wait for the row lock: lock_timeout in ms (0 = wait forever). NOWAIT is used for
-- "do not wait" (-1), so that value never matters here.
-- sqlock: skip-if-unchanged
SELECT set_config('lock_timeout', GREATEST($1::bigint, 0)::text, false)
