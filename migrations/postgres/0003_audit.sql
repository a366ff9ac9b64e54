-- sqlock schema v3 (PostgreSQL): a record of operator actions (sqlock release --force).
CREATE TABLE IF NOT EXISTS {audit} (
    id         bigserial PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT statement_timestamp(),
    action     text NOT NULL,
    name       text COLLATE "C" NOT NULL,
    actor      text NOT NULL,
    old_owner  text NOT NULL,
    old_token  bigint NOT NULL,
    new_token  bigint NOT NULL
);
