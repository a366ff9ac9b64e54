-- $1 limit -> rows (seen_at UTC text, observer, step_ms, age_ms), newest first.
SELECT DATE_FORMAT(seen_at, '%Y-%m-%d %H:%i:%s.%f') AS seen_at, observer, step_ms,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, seen_at, UTC_TIMESTAMP(6)) / 1000) AS age_ms
FROM {clock_steps} ORDER BY id DESC LIMIT $1
