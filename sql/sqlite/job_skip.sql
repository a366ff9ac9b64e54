-- A firing found its slot done: counted, not stored.
UPDATE {jobs} SET skipped = skipped + 1 WHERE name = $1
