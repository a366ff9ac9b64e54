-- Release: compare-and-set back to a free row (kept for the next read + CAS).
UPDATE {locks} SET owner = '', hold_count = 1, expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
WHERE name = $1 AND owner = $2 AND token = $3
