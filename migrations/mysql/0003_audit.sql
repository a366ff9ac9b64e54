-- sqlock schema v3 (MariaDB): a record of operator actions (sqlock release --force).
CREATE TABLE IF NOT EXISTS {audit} (
    id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at         DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
    action     VARCHAR(32) NOT NULL,
    name       VARBINARY(255) NOT NULL,
    actor      VARCHAR(255) NOT NULL,
    old_owner  VARBINARY(255) NOT NULL,
    old_token  BIGINT NOT NULL,
    new_token  BIGINT NOT NULL
) ENGINE = InnoDB;
