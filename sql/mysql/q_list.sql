-- quorum, for status and release --force: this member's rows (every name, or name $1 when not
-- NULL): the highest token it accepted, the holder ('' free), and for operators when the lease
-- was taken and how long it has left on this member's clock (NULL when free; no lock decision
-- reads it).
SELECT name, token, owner, host, pid, ttl_ms, version,
       DATE_FORMAT(acquired_at, '%Y-%m-%d %H:%i:%s.%f') AS acquired_at,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000) AS expires_in_ms
FROM {quorum}
WHERE $1 IS NULL OR name = $1
ORDER BY name
