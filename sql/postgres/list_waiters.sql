-- Callers waiting for a lock, as the server shows them (sqlock status; takes no lock):
--   unique_key and optimistic_version: the sessions in a name's queue, the session-level
--   advisory lock of uk_queue_enter (keys 1936483696, hashtext('{channel}/' || name); its
--   objid is the hash as an unsigned 32-bit number). The one that has it (granted) is the
--   lease's holder or the next in line; the others wait for it, in the order they came.
--   select_for_update: the sessions in line for the row, through its tuple lock (a waiter
--   takes it, then waits for the holder's transaction; the ones behind wait for the tuple
--   lock). The holder itself takes no tuple lock.
-- application_name: "sqlock host:pid" as connected (postgres_session.cpp), or a lock
-- session's owner id while it locks (fu_session).
-- Columns: name, session (backend pid), who (application_name), waited_ms, granted (1/0).
SELECT l.name, k.pid AS session, COALESCE(a.application_name, '') AS who,
       CAST(floor(EXTRACT(EPOCH FROM (statement_timestamp() -
            COALESCE(k.waitstart, a.query_start, statement_timestamp()))) * 1000) AS bigint)
           AS waited_ms,
       CASE WHEN k.granted THEN 1 ELSE 0 END AS granted
FROM {locks} AS l
JOIN pg_locks AS k
  ON k.locktype = 'advisory' AND k.database = (SELECT oid FROM pg_database
                                               WHERE datname = current_database())
 AND k.classid = 1936483696 AND k.objsubid = 2
 AND k.objid::bigint = (hashtext('{channel}/' || l.name)::bigint & 4294967295)
LEFT JOIN pg_stat_activity AS a ON a.pid = k.pid
WHERE l.strategy <> 'select_for_update'
UNION ALL
SELECT l.name, k.pid, COALESCE(a.application_name, ''),
       CAST(floor(EXTRACT(EPOCH FROM (statement_timestamp() -
            COALESCE(k.waitstart, a.query_start, statement_timestamp()))) * 1000) AS bigint),
       0
FROM {locks} AS l
JOIN pg_locks AS k
  ON k.locktype = 'tuple' AND k.relation = l.tableoid
 AND k.page = (l.ctid::text::point)[0] AND k.tuple = (l.ctid::text::point)[1]
LEFT JOIN pg_stat_activity AS a ON a.pid = k.pid
WHERE l.strategy = 'select_for_update'
ORDER BY 1, 5 DESC, 4 DESC
