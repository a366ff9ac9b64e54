-- optimistic_version, step 1: the row's version (token), holder and whether its lease is live.
SELECT token, owner, hold_count, owner <> '' AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
FROM {locks} WHERE name = $1
