-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT 1, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
