-- Attempts still marked running by grants older than the caller's ($2). Called under the
-- job's lock: their runners lost the lock (crashed, or their lease ran out).
SELECT token FROM {job_runs} WHERE name = $1 AND outcome = 'running' AND token < $2
ORDER BY token
