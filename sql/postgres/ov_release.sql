-- Release: compare-and-set back to a free row (kept, so the next acquire is read + CAS).
-- owner always changes, so the affected-row count is exact.
UPDATE {locks} SET owner = '', hold_count = 1, expires_at = statement_timestamp()
WHERE name = $1::text AND owner = $2::text AND token = $3::bigint
