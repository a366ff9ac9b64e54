-- One bounded batch of FREE rows (released: owner '') whose lease ended longer than the grace
-- ($2 ms) ago. Deleting a free row never ends anyone's lock, whatever the clock says; rows
-- still held are reaped only through drop_stale_lease, after the reaper saw them unchanged for
-- their TTL (reap_candidates). SQLite serialises writers, so the condition holds for every row
-- deleted.
DELETE FROM {locks}
WHERE name IN (SELECT name FROM {locks}
               WHERE owner = '' AND strategy <> 'select_for_update' AND expires_at < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $2
               ORDER BY expires_at LIMIT $1)
