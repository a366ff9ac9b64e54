-- quorum, for status and release --force: this member's rows (every name, or name $1 when not
-- NULL): the highest token it accepted, the holder ('' free), and for operators when the lease
-- was taken and how long it has left on this member's clock (NULL when free; no lock decision
-- reads it).
SELECT name, token, owner, host, pid, ttl_ms, version,
       to_char(acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS acquired_at,
       CAST(floor(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000) AS bigint)
           AS expires_in_ms
FROM {quorum}
WHERE $1::text IS NULL OR name = $1::text
ORDER BY name
