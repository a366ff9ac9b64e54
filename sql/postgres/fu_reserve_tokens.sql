-- select_for_update, on the lock session before it locks (outside a transaction): raise the
-- durable high-water mark to the token sequence's position + block $1 and return it, durably
-- (synchronous_commit at least 'on', as fu_raise_hwm). The tokens this process draws next are
-- then covered without a second connection to raise the mark while the lock's transaction is
-- open. pg_sequence_last_value needs USAGE on the sequence, as nextval does; NULL before the
-- first nextval.
UPDATE {token_hwm}
SET value = GREATEST(value, COALESCE(pg_sequence_last_value('{token_seq}'), 0) + $1::bigint)
FROM (SELECT set_config('synchronous_commit',
                        CASE current_setting('synchronous_commit')
                            WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
                        true)) AS durable
WHERE id = 1
RETURNING value
