-- Break-glass release of a select_for_update lock: end the holder's session (found through
-- the row's xmax = its transaction id); the server rolls its transaction back. -> rows ended
SELECT pg_terminate_backend(a.pid)
FROM {locks} AS l JOIN pg_stat_activity AS a ON a.backend_xid = l.xmax
WHERE l.name = $1::text AND l.strategy = 'select_for_update'
