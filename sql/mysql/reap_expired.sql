-- One bounded batch of FREE rows (released: owner '') whose lease ended longer than the grace
-- ($2 ms) ago, walking the expires_at index. Deleting a free row never ends anyone's lock,
-- whatever the clock says; rows still held are reaped only through drop_stale_lease, after the
-- reaper saw them unchanged for their TTL (reap_candidates). select_for_update rows never
-- expire. DELETE reads the latest row version under its row lock.
DELETE FROM {locks}
WHERE owner = '' AND strategy <> 'select_for_update'
  AND expires_at < UTC_TIMESTAMP(6) - INTERVAL ($2 * 1000) MICROSECOND
ORDER BY expires_at LIMIT $1
