-- The row of one lock, with the columns of list_locks (database::find, leader_election::leader):
-- one primary-key lookup instead of a scan of the whole table.
SELECT name, owner, host, pid, strategy, token, hold_count,
       DATE_FORMAT(acquired_at, '%Y-%m-%d %H:%i:%s.%f') AS acquired_at,
       DATE_FORMAT(expires_at, '%Y-%m-%d %H:%i:%s.%f') AS expires_at,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000) AS expires_in_ms,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) / 1000) AS held_for_ms
FROM {locks} WHERE name = $1
