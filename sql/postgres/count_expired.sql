SELECT count(*) FROM {locks}
WHERE expires_at < statement_timestamp() - $1::bigint * interval '1 millisecond'
