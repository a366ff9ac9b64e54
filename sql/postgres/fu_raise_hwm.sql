-- select_for_update: raise this process's durable high-water mark to GREATEST(token $1, the
-- token sequence's position) + block $2 and return it, durably (synchronous_commit at least
-- 'on', so it is flushed, and on a synchronous standby, before a token it covers is handed
-- out), whatever the session or server default. Sent on the lock session before it locks
-- ($1 = 0: cover the tokens drawn next) about once per half block, so no grant needs a second
-- connection; on the pool only as the last resort. pg_sequence_last_value needs USAGE on the
-- sequence, as nextval does; NULL before the first nextval.
UPDATE {token_hwm}
SET value = GREATEST(value,
                     GREATEST($1::bigint, COALESCE(pg_sequence_last_value('{token_seq}'), 0))
                         + $2::bigint)
FROM (SELECT set_config('synchronous_commit',
                        CASE current_setting('synchronous_commit')
                            WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
                        true)) AS durable
WHERE id = 1
RETURNING value
