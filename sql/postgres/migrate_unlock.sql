SELECT CAST(pg_advisory_unlock(hashtextextended($1::text, 0)) AS integer)
