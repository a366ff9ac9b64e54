-- Release: compare-and-set back to a free row (kept, so the next acquire is read + CAS), and
-- wake this name's waiters in every process (LISTEN "<prefix>release"). The number of rows
-- returned is the number of leases released (0 = it was not ours).
WITH released AS (
    UPDATE {locks} SET owner = '', hold_count = 1, expires_at = statement_timestamp()
    WHERE name = $1::text AND owner = $2::text AND token = $3::bigint
    RETURNING name
)
SELECT pg_notify('{channel}', name) FROM released
