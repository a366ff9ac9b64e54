-- quorum, for status and release --force: this member's rows (every name, or name $1 when not
-- NULL): the highest token it accepted, the holder ('' free), and for operators when the lease
-- was taken and how long it has left on this member's clock (NULL when free; no lock decision
-- reads it).
SELECT name, token, owner, host, pid, ttl_ms, version,
       strftime('%Y-%m-%d %H:%M:%f', acquired_at / 1000.0, 'unixepoch') || '000' AS acquired_at,
       expires_at - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS expires_in_ms
FROM {quorum}
WHERE $1 IS NULL OR name = $1
ORDER BY name
