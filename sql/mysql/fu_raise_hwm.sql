-- Before lock() hands out a token above this process's durable high-water mark: raise the mark
-- to token $1 + block $2 and return it, in one autocommit statement (durable with
-- innodb_flush_log_at_trx_commit = 1). raises always changes, so the commit always writes and
-- flushes the log, also when another process's raise (visible before it is flushed) already
-- put the mark higher. Once per block of tokens per process.
INSERT INTO {token_hwm} (id, value) VALUES (1, $1 + $2)
ON DUPLICATE KEY UPDATE value = GREATEST(value, VALUES(value)), raises = raises + 1
RETURNING value
