-- MariaDB does not expose which session holds an uncontended row lock: nothing to select.
-- (sqlock release --force reports that; KILL the holder's mutex::server_session_id().)
SELECT 0 FROM {locks} WHERE 1 = 0 AND name = $1
