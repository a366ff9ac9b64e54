-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
