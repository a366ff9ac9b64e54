-- The row of one lock, with the columns of list_locks (database::find, leader_election::leader):
-- one primary-key lookup instead of a scan of the whole table.
SELECT name, owner, host, pid, strategy, token, hold_count,
       DATE_FORMAT(acquired_at, '%Y-%m-%d %H:%i:%s.%f'),
       DATE_FORMAT(expires_at, '%Y-%m-%d %H:%i:%s.%f'),
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000),
       FLOOR(TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) / 1000)
FROM {locks} WHERE name = $1
