-- One bounded batch of leases expired for longer than the grace ($2 ms), by the database clock.
-- SKIP LOCKED: never wait on a row someone is acquiring or renewing; the outer condition is
-- re-checked on the latest row version, so a lease renewed meanwhile survives.
DELETE FROM {locks}
WHERE name IN (SELECT name FROM {locks}
               WHERE expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
               ORDER BY expires_at LIMIT $1::bigint
               FOR UPDATE SKIP LOCKED)
  AND expires_at < statement_timestamp() - $2::bigint * interval '1 millisecond'
