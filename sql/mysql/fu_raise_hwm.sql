-- select_for_update: raise this process's durable high-water mark to GREATEST(token $1, the
-- token sequence's position) + block $2 and return it. Every value the sequence handed out,
-- cached ones included, is below next_not_cached_value. Sent on the lock session before it
-- locks ($1 = 0: cover the tokens drawn next; committed right after, lock sessions run with
-- autocommit off) about once per half block, on the pool only as the last resort. raises
-- always changes, so the commit always writes and flushes the log
-- (innodb_flush_log_at_trx_commit = 1), also when another process's raise (visible before it
-- is flushed) already put the mark higher.
INSERT INTO {token_hwm} (id, value)
VALUES (1, GREATEST($1, (SELECT next_not_cached_value FROM {token_seq})) + $2)
ON DUPLICATE KEY UPDATE value = GREATEST(value, VALUES(value)), raises = raises + 1
RETURNING value
