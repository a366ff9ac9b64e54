-- Before lock() hands out a token above this process's durable high-water mark: raise the mark
-- to token $1 + block $2 and return it, in one autocommit statement (durable with
-- innodb_flush_log_at_trx_commit = 1). Once per block of tokens per process.
INSERT INTO {token_hwm} (id, value) VALUES (1, $1 + $2)
ON DUPLICATE KEY UPDATE value = GREATEST(value, VALUES(value))
RETURNING value
