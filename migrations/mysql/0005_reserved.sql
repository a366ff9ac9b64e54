-- sqlock schema v5: reserved. Another branch is adding migration 0005; this placeholder keeps the
-- version numbers contiguous on the "cron" branch until that one is merged and replaces it.
SELECT 1;
