-- A job fired: create its row, or note the firing and the period it fired with
-- ($2 = 0, a caller-named slot without a period, keeps the one known).
INSERT INTO {jobs} (name, period_ms, first_fired_ms, last_fired_ms)
VALUES ($1, $2, (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000), (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000))
ON DUPLICATE KEY UPDATE
    period_ms     = IF(VALUES(period_ms) > 0, VALUES(period_ms), period_ms),
    last_fired_ms = VALUES(last_fired_ms)
