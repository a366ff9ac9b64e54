-- A job fired: create its row, or note the firing and the period it fired with
-- ($2 = 0, a caller-named slot without a period, keeps the one known).
INSERT INTO {jobs} AS j (name, period_ms, first_fired_ms, last_fired_ms)
VALUES ($1, $2, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
ON CONFLICT (name) DO UPDATE SET
    period_ms     = CASE WHEN excluded.period_ms > 0 THEN excluded.period_ms ELSE j.period_ms END,
    last_fired_ms = excluded.last_fired_ms
