-- Server-side wait for the row lock: lock_timeout in ms (0 = wait forever). NOWAIT is used for
-- "do not wait" (-1). Sent before BEGIN and with every acquire (pipelined, so free): a rolled
-- back transaction may undo it, so it is never skipped as unchanged.
SELECT set_config('lock_timeout', GREATEST($1::bigint, 0)::text, false)
