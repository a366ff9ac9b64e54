-- SQLite shows no sessions: its waiters are the tickets of each name's queue file, read by
-- sqlock status itself (fair_queue.hpp, tickets_in_line).
SELECT NULL, NULL, NULL, NULL, NULL WHERE 0
