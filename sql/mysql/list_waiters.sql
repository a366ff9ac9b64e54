-- unique_key and optimistic_version waiters in a name's queue (the user-level lock of
-- uk_queue_enter) show only in performance_schema.metadata_locks, which needs the server
-- started with performance_schema = ON; select_for_update waiters come from the InnoDB lock
-- monitor (session::row_locks). Without the instrument (performance_schema OFF, or
-- wait/lock/metadata/sql/mdl not enabled) the last part returns one row with a NULL name:
-- the waiters are hidden. who: "pid N", the client's process id as its connector reports it
-- (connection attribute _pid), which tells the lease's holder from the next in line.
SELECT l.name, t.PROCESSLIST_ID AS session,
       COALESCE((SELECT CONCAT('pid ', a.ATTR_VALUE)
                 FROM performance_schema.session_connect_attrs AS a
                 WHERE a.PROCESSLIST_ID = t.PROCESSLIST_ID AND a.ATTR_NAME = '_pid'), '') AS who,
       CAST(COALESCE(t.PROCESSLIST_TIME, 0) * 1000 AS SIGNED) AS waited_ms,
       CASE WHEN m.LOCK_STATUS = 'GRANTED' THEN 1 ELSE 0 END AS granted
FROM {locks} AS l
JOIN performance_schema.metadata_locks AS m
  ON m.OBJECT_TYPE = 'USER LEVEL LOCK'
 AND m.OBJECT_NAME = LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', l.name), 256)), 64)
JOIN performance_schema.threads AS t ON t.THREAD_ID = m.OWNER_THREAD_ID
WHERE l.strategy <> 'select_for_update'
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM performance_schema.setup_instruments
                  WHERE NAME = 'wait/lock/metadata/sql/mdl' AND ENABLED = 'YES')
ORDER BY 1, 5 DESC, 4 DESC
