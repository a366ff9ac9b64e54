-- sqlock schema v8 (MariaDB): each migration records the oldest library schema version that
-- can share the tables once it is applied (compatible_from; NULL for the rows of v1..v7, which
-- were recorded before the column existed and are each compatible from their own version).
-- A library at schema L that finds the tables at M > L works on when every migration above L
-- says compatible_from <= L (docs: operations/upgrades). Additive only: v7 libraries read the
-- table by its named columns.
-- sqlock: compatible-from 7
ALTER TABLE {migrations} ADD COLUMN IF NOT EXISTS compatible_from INT NULL;
