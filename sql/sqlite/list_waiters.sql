-- SQLite shows no sessions: its waiters are the tickets of each name's queue file, read by
-- sqlock status itself (fair_queue.hpp, tickets_in_line).
SELECT NULL AS name, NULL AS session, NULL AS who, NULL AS waited_ms, NULL AS granted WHERE 0
