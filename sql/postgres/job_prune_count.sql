-- How many ledger rows job_prune would delete with retention $1 ms (rows younger
-- than their own period are kept too: the slot rule reads them).
SELECT COUNT(*) AS expired FROM {job_runs} WHERE started_ms < CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - $1::bigint
  AND started_ms < CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - period_ms
