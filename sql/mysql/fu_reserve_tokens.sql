-- select_for_update, on the lock session before it locks (committed right after: lock sessions
-- run with autocommit off): raise the durable high-water mark to the token sequence's position
-- + block $1 and return it. Every value the sequence handed out, cached ones included, is below
-- next_not_cached_value. raises always changes, so the commit always writes and flushes the log
-- (innodb_flush_log_at_trx_commit = 1), as for fu_raise_hwm. The tokens this process draws next
-- are then covered without a second connection to raise the mark during the hold.
INSERT INTO {token_hwm} (id, value)
VALUES (1, (SELECT next_not_cached_value FROM {token_seq}) + $1)
ON DUPLICATE KEY UPDATE value = GREATEST(value, VALUES(value)), raises = raises + 1
RETURNING value
