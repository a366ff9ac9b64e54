DELETE FROM {locks}
WHERE name IN (SELECT name FROM {locks} WHERE expires_at < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
               ORDER BY expires_at LIMIT $1)
