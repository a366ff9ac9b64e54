SELECT name, owner, host, pid, strategy, token, hold_count,
       DATE_FORMAT(acquired_at, '%Y-%m-%d %H:%i:%s.%f'),
       DATE_FORMAT(expires_at, '%Y-%m-%d %H:%i:%s.%f'),
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000),
       FLOOR(TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) / 1000)
FROM {locks} ORDER BY name
