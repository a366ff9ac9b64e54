-- One bounded batch of leases expired for longer than the grace ($2 ms). SQLite serialises
-- writers, so the condition holds for every row deleted.
DELETE FROM {locks}
WHERE name IN (SELECT name FROM {locks} WHERE expires_at < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $2
               ORDER BY expires_at LIMIT $1)
