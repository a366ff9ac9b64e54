-- $1 limit -> rows (seen_at UTC text, observer, step_ms, age_ms), newest first.
SELECT to_char(seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS seen_at, observer,
       step_ms,
       CAST(floor(EXTRACT(EPOCH FROM (statement_timestamp() - seen_at)) * 1000) AS bigint)
           AS age_ms
FROM {clock_steps} ORDER BY id DESC LIMIT $1::bigint
