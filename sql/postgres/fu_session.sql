-- Guards for this lock's transaction, local to it (they end with it, so a pooled lock session
-- carries nothing over): the owner shows in pg_stat_activity.application_name; a holder idle in
-- its transaction for longer than the TTL (paused, hung, partitioned) has its session ended by
-- the server, which frees the lock; the lock-only transaction commits asynchronously (a release
-- lost in a crash only means "held until the session dies", which the crash ends anyway).
SELECT set_config('application_name', left($1::text, 63), true),
       set_config('idle_in_transaction_session_timeout', $2::bigint::text, true),
       set_config('synchronous_commit', 'off', true)
