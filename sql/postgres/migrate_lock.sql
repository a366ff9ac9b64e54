-- Session-level advisory lock: concurrent migrators wait here, one at a time.
SELECT CAST(pg_advisory_lock(hashtextextended($1::text, 0)) IS NOT NULL AS integer)
