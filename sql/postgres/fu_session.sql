-- Guards for this lock's transaction, local to it (they end with it, so a pooled lock session
-- carries nothing over), all tied to the TTL ($2, ms):
--   - the owner shows in pg_stat_activity.application_name (cut at 63 bytes);
--   - a holder idle in its transaction for longer than the TTL (paused, hung) has its session
--     ended by the server, which frees the lock;
--   - a vanished client (host down, partition) is detected by server-side TCP keepalives
--     (idle TTL/3, then 3 probes TTL/9 apart) and tcp_user_timeout, within about the TTL;
--   - the lock-only transaction commits asynchronously: a release lost in a server crash only
--     means "held until the session dies", which the crash ends anyway.
SELECT set_config('application_name', left($1::text, 63), true),
       set_config('idle_in_transaction_session_timeout', $2::bigint::text, true),
       set_config('tcp_keepalives_idle', GREATEST(1, $2::bigint / 3000)::text, true),
       set_config('tcp_keepalives_interval', GREATEST(1, $2::bigint / 9000)::text, true),
       set_config('tcp_keepalives_count', '3', true),
       set_config('tcp_user_timeout', $2::bigint::text, true),
       set_config('synchronous_commit', 'off', true)
