-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- Rows younger than their own period are kept whatever the retention (the slot rule reads
-- them), and so are the job rows (counters, last success).
DELETE FROM {job_runs}
WHERE ctid = ANY (ARRAY(SELECT ctid FROM {job_runs}
                        WHERE started_ms < CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - $2::bigint
                          AND started_ms < CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - period_ms
                        ORDER BY started_ms LIMIT $1::bigint
                        FOR UPDATE SKIP LOCKED))
