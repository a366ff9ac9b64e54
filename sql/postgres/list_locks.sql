SELECT name, owner, host, pid, strategy, token, hold_count,
       to_char(acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'),
       to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'),
       CAST(floor(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000) AS bigint)
FROM {locks} ORDER BY name
