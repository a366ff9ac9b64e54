-- The row of one lock, with the columns of list_locks (database::find, leader_election::leader):
-- one primary-key lookup instead of a scan of the whole table.
-- select_for_update rows hold no owner: the holder is the session whose open transaction has
-- the row locked (row xmax = its transaction id). Its application_name carries the owner id
-- ("host:pid:nonce/..." cut at 63 bytes), from which host and pid are shown.
SELECT l.name,
       CASE WHEN l.strategy = 'select_for_update' THEN COALESCE(a.application_name, '')
            ELSE l.owner END AS owner,
       CASE WHEN l.strategy = 'select_for_update'
            THEN COALESCE(split_part(a.application_name, ':', 1), '') ELSE l.host END AS host,
       CASE WHEN l.strategy = 'select_for_update'
            THEN COALESCE(NULLIF(split_part(a.application_name, ':', 2), '')::bigint, 0)
            ELSE l.pid END AS pid,
       l.strategy, l.token, l.hold_count,
       to_char(CASE WHEN a.pid IS NULL THEN l.acquired_at ELSE a.xact_start END
               AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS acquired_at,
       to_char(l.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS expires_at,
       CAST(floor(EXTRACT(EPOCH FROM (l.expires_at - statement_timestamp())) * 1000) AS bigint)
           AS expires_in_ms,
       CAST(floor(EXTRACT(EPOCH FROM (statement_timestamp() -
                  CASE WHEN a.pid IS NULL THEN l.acquired_at ELSE a.xact_start END)) * 1000)
            AS bigint) AS held_for_ms
FROM {locks} AS l
LEFT JOIN pg_stat_activity AS a
       ON l.strategy = 'select_for_update' AND a.backend_xid = l.xmax
WHERE l.name = $1::text
