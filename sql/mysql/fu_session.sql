-- Per-session guard for a select_for_update holder: a transaction idle for longer than the TTL
-- (holder paused, hung, partitioned) has its connection closed by the server, which frees the
-- lock. Whole seconds, rounded up. The owner is carried by the connection attribute
-- "sqlock_process" instead (set when the lock session connects).
-- sqlock: skip-if-unchanged
SET SESSION idle_transaction_timeout = GREATEST(1, CEIL($2 / 1000))
