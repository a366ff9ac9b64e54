-- Before lock() hands out a token above this process's durable high-water mark: raise the mark
-- to token $1 + block $2 and return it, durably (synchronous_commit at least 'on', so it is
-- flushed, and on a synchronous standby, before the token is handed out), whatever the session
-- or server default. Once per block of tokens per process.
UPDATE {token_hwm} SET value = GREATEST(value, $1::bigint + $2::bigint)
FROM (SELECT set_config('synchronous_commit',
                        CASE current_setting('synchronous_commit')
                            WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
                        true)) AS durable
WHERE id = 1
RETURNING value
