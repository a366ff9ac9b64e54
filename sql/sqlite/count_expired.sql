SELECT count(*) AS expired FROM {locks} WHERE expires_at < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $1
