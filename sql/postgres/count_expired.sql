SELECT count(*) AS expired FROM {locks}
WHERE expires_at < statement_timestamp() - $1::bigint * interval '1 millisecond'
