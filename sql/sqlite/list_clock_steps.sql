-- $1 limit -> rows (seen_at UTC text, observer, step_ms, age_ms), newest first.
SELECT strftime('%Y-%m-%d %H:%M:%f', seen_at / 1000.0, 'unixepoch') || '000' AS seen_at,
       observer, step_ms,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - seen_at AS age_ms
FROM {clock_steps} ORDER BY id DESC LIMIT $1
