SELECT name, owner, host, pid, strategy, token, hold_count,
       strftime('%Y-%m-%d %H:%M:%f', acquired_at / 1000.0, 'unixepoch') || '000' AS acquired_at,
       strftime('%Y-%m-%d %H:%M:%f', expires_at / 1000.0, 'unixepoch') || '000' AS expires_at,
       expires_at - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS expires_in_ms,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - acquired_at AS held_for_ms
FROM {locks} ORDER BY name
