"""The lock database: :func:`connect` and :class:`Database`."""
from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from . import _fork, _sqlock
from ._durations import Duration, optional_ms, to_ms
from .errors import InheritedHandle
from .status import JobInfo, JobRun, LockStatus, job_history, list_jobs, status

__all__ = ["Database", "connect", "connect_async"]


class Database:
    """A connection pool to one lock database (the C API's ``sqlock_db``). Thread-safe: any
    number of threads, and the locks made from it, may share one. A lock keeps the pool alive,
    so the database may be closed before its locks.

    Use as a context manager to close it at the end of a block.
    """

    def __init__(self, url: str, *, table_prefix: Optional[str] = None,
                 connect_timeout: Optional[Duration] = None,
                 io_timeout: Optional[Duration] = None, pool_size: Optional[int] = None,
                 password_file: Optional[str] = None,
                 require_synchronous_replication: bool = False) -> None:
        """Opens ``url`` ("postgresql://user:pw@host:port/db", "mysql://..." or
        "mariadb://...", "sqlite:///abs/path.db") and makes the first connection at once
        (ConnectionFailed when it cannot). ``connect_timeout`` bounds one connect (default
        5 s), ``io_timeout`` one reply (default 30 s; 0: no bound), ``pool_size`` the
        connections kept open (default 8). Blocks the calling thread: in asyncio code use
        :func:`connect_async`."""
        io_ms = -1 if io_timeout is None else to_ms(io_timeout, "io_timeout")
        self._c: Optional[_sqlock.Database] = _sqlock.Database(
            url, table_prefix, optional_ms(connect_timeout, "connect_timeout"), io_ms,
            pool_size or 0, password_file, require_synchronous_replication)
        self._inherited = False
        _fork.track(self)

    @property
    def handle(self) -> _sqlock.Database:
        """The C handle (for the lock classes). Raises InheritedHandle in a forked child and
        ValueError once closed."""
        if self._inherited:
            raise InheritedHandle("this database was opened before fork(): it belongs to the "
                                  "parent process; connect again in the child", -1)
        if self._c is None:
            raise ValueError("the database is closed")
        return self._c

    @property
    def backend(self) -> str:
        """"postgresql", "mysql" or "sqlite"."""
        return self.handle.backend()

    def migrate(self) -> None:
        """Creates or upgrades the lock tables (idempotent; safe to run from many processes
        at once). Blocks: in asyncio code, ``await asyncio.to_thread(db.migrate)``."""
        self.handle.migrate()

    def reap(self) -> int:
        """Deletes expired lock rows; returns how many."""
        return self.handle.reap()

    def status(self, name: Optional[str] = None) -> List[LockStatus]:
        """Who holds what: :func:`sqlock.status` (every lock row, or those of ``name``)."""
        return status(self, name)

    def job_history(self, name: str, limit: int = 20) -> List[JobRun]:
        """Job ``name``'s newest ``limit`` attempts, newest first: :func:`sqlock.job_history`."""
        return job_history(self, name, limit)

    def list_jobs(self) -> List[JobInfo]:
        """Every job that ever fired here, by name: :func:`sqlock.list_jobs`."""
        return list_jobs(self)

    def fencing_condition(self, name_placeholder: str, token_placeholder: str) -> str:
        """The SQL condition, for a write in your own transaction on this database, that is
        true only while lock NAME is held with token TOKEN; you bind the placeholders
        (e.g. "%s" for psycopg2 and PyMySQL, "?" for sqlite3) to the name and the token.
        A write by a holder that lost the lock to another then changes nothing."""
        return self.handle.fencing_condition(name_placeholder, token_placeholder)

    def close(self) -> None:
        """Closes the handle (locks made from it keep the pool until they are closed)."""
        if self._c is not None and not self._inherited:
            self._c.close()
        self._c = None

    def _forget_after_fork(self) -> None:
        """In a forked child: drops the parent's pool without closing it."""
        self._inherited = True
        if self._c is not None:
            self._c.forget()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect(url: str, **options: Any) -> Database:
    """Opens the lock database at ``url``: ``Database(url, **options)``."""
    return Database(url, **options)


async def connect_async(url: str, **options: Any) -> Database:
    """:func:`connect` on a worker thread, so the event loop keeps running meanwhile."""
    return await asyncio.to_thread(Database, url, **options)
