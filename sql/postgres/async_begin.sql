-- Release statements run as [async_begin, async_commit_off, <release>, async_commit], one
-- pipelined round trip: a release lost in a server crash only leaves the lease to expire at
-- its TTL, so it need not wait for the WAL flush (synchronous_commit = off).
BEGIN
