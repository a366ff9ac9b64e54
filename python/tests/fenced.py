"""A write fenced by the lock, in the application's own transaction, with the application's
own driver (sqlite3, psycopg2, PyMySQL): what docs/site/guides/fencing.md prescribes."""
from __future__ import annotations

import sqlite3
import uuid
from typing import Any
from urllib.parse import unquote, urlparse

import sqlock


def _driver_connection(url: str) -> Any:
    """A DB-API connection of the application's own to the lock database."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        return sqlite3.connect(parsed.path, timeout=30, isolation_level=None)
    if parsed.scheme.startswith("postgres"):
        import psycopg2
        return psycopg2.connect(url)
    import pymysql
    return pymysql.connect(host=parsed.hostname, port=parsed.port or 3306,
                           user=unquote(parsed.username or ""),
                           password=unquote(parsed.password or ""),
                           database=parsed.path.lstrip("/"))


class FencedRow:
    """One row of an application table, written only under the lock ``name``."""

    def __init__(self, db: sqlock.Database, url: str, name: str) -> None:
        self.name = name
        self.sqlite = url.startswith("sqlite:")
        mark = "?" if self.sqlite else "%s"
        self.condition = db.fencing_condition(mark, mark)
        self.mark = mark
        self.table = "py_fenced_" + uuid.uuid4().hex[:12]
        self.conn = _driver_connection(url)
        self._run(f"CREATE TABLE {self.table} (id INTEGER PRIMARY KEY, v BIGINT)")
        self._run(f"INSERT INTO {self.table} (id, v) VALUES (1, 0)")

    def _run(self, sql: str, params: tuple = ()) -> int:
        cur = self.conn.cursor()
        if self.sqlite:
            cur.execute("BEGIN IMMEDIATE")
        cur.execute(sql, params)
        count = cur.rowcount
        self.conn.commit() if not self.sqlite else cur.execute("COMMIT")
        return count

    def write(self, value: int, token: int) -> bool:
        """Sets the row to ``value`` if the lock is held with ``token``: True when it was."""
        sql = (f"UPDATE {self.table} SET v = {self.mark} WHERE id = 1 AND "
               f"{self.condition}")
        return self._run(sql, (value, self.name, token)) == 1

    def value(self) -> int:
        cur = self.conn.cursor()
        cur.execute(f"SELECT v FROM {self.table} WHERE id = 1")
        return int(cur.fetchone()[0])

    def close(self) -> None:
        self._run(f"DROP TABLE {self.table}")
        self.conn.close()
