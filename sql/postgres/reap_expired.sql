-- One bounded batch of FREE rows (released: owner '') whose lease ended longer than the grace
-- ($2 ms) ago, by the database clock. Deleting a free row never ends anyone's lock, whatever the
-- clock says; rows still held are reaped only through drop_stale_lease, after the reaper saw
-- them unchanged for their TTL (reap_candidates). select_for_update rows never expire.
-- The rows are picked and locked by physical row id (SKIP LOCKED: never wait on a row someone is
-- acquiring); the outer condition is checked again on the latest row version. Picking by ctid
-- keeps each batch cheap whatever the backlog (a join on name let the plan scan every row).
DELETE FROM {locks}
WHERE ctid = ANY (ARRAY(SELECT ctid FROM {locks}
                        WHERE owner = '' AND strategy <> 'select_for_update'
                          AND expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
                        ORDER BY expires_at LIMIT $1::bigint
                        FOR UPDATE SKIP LOCKED))
  AND owner = '' AND strategy <> 'select_for_update'
  AND expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
