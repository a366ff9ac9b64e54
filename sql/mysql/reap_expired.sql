-- One bounded batch of leases expired for longer than the grace ($2 ms), walking the
-- expires_at index. DELETE reads the latest row version under its row lock, so a lease
-- renewed meanwhile no longer matches and survives.
DELETE FROM {locks}
WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ($2 * 1000) MICROSECOND
ORDER BY expires_at LIMIT $1
