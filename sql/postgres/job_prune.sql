-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- The job rows (counters, last success) are kept.
DELETE FROM {job_runs}
WHERE ctid = ANY (ARRAY(SELECT ctid FROM {job_runs}
                        WHERE started_ms < CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - $2::bigint
                        ORDER BY started_ms LIMIT $1::bigint
                        FOR UPDATE SKIP LOCKED))
