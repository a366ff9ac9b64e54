-- One bounded batch. SKIP LOCKED: never wait on a row an acquirer is busy with; the outer
-- condition is re-checked on the latest row version, so a lease renewed meanwhile survives.
DELETE FROM {locks}
WHERE name IN (SELECT name FROM {locks}
               WHERE expires_at < statement_timestamp()
               ORDER BY expires_at LIMIT $1::bigint
               FOR UPDATE SKIP LOCKED)
  AND expires_at < statement_timestamp()
