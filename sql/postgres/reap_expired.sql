-- One bounded batch of leases expired for longer than the grace ($2 ms), by the database clock.
-- The rows are picked and locked by physical row id (SKIP LOCKED: never wait on a row someone is
-- acquiring or renewing); a lease renewed meanwhile has a new row version, so it is not picked,
-- and the outer condition is checked again on the latest version anyway. Picking by ctid keeps
-- each batch cheap whatever the backlog (a join on name let the plan scan every expired row).
DELETE FROM {locks}
WHERE ctid = ANY (ARRAY(SELECT ctid FROM {locks}
                        WHERE expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
                        ORDER BY expires_at LIMIT $1::bigint
                        FOR UPDATE SKIP LOCKED))
  AND expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
