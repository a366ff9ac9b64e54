"""The exceptions of sqlock: one class per category of the C++ ``sqlock::errc`` (and of the C
API's ``sqlock_code``), all under :class:`Error`.

Where a builtin exception means the same, the class derives from it too, so generic handlers
work: :class:`InvalidArgument` is a :class:`ValueError`, :class:`ConnectionFailed` a
:class:`ConnectionError`, :class:`Timeout` a :class:`TimeoutError`, :class:`OutOfMemory` a
:class:`MemoryError`.
"""
from __future__ import annotations

from typing import Dict, Type

from . import _sqlock

__all__ = [
    "Error", "InvalidArgument", "ConnectionFailed", "Timeout", "Conflict", "LockLost",
    "SchemaMissing", "SchemaMismatch", "Unsupported", "TopologyUnsafe", "BackendError",
    "Canceled", "OutOfMemory", "InternalError", "InheritedHandle",
]


class Error(Exception):
    """A failure sqlock reports. Its fields are those of the C API's error object.

    Attributes:
        code: the C API's ``sqlock_code`` (negative).
        code_name: its stable name ("connection", "lock_lost", ...).
        message: what went wrong, naming the lock or database (never a password).
        sqlstate: the SQLSTATE the database reported, or "".
        native_code: the database's own error code (MariaDB errno, SQLite result code), or 0.
        backend: "postgresql", "mysql", "sqlite", or "" when no database was involved.
        retryable: True when trying again later may succeed.
        server_full: True when the server refused a connection for lack of free slots.
    """

    def __init__(self, message: str, code: int = -99, sqlstate: str = "", native_code: int = 0,
                 backend: str = "", retryable: bool = False, server_full: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.code_name = _sqlock.code_name(code)
        self.sqlstate = sqlstate
        self.native_code = native_code
        self.backend = backend
        self.retryable = bool(retryable)
        self.server_full = bool(server_full)


class InvalidArgument(Error, ValueError):
    """Bad input: a lock name, a TTL, a URL, an option; or a release by a non-holder."""


class ConnectionFailed(Error, ConnectionError):
    """The database cannot be reached, refused the login, or dropped the connection."""


class Timeout(Error, TimeoutError):
    """A statement, connect or server-side deadline passed (not an acquire's own timeout:
    ``acquire(timeout=...)`` returns False then)."""


class Conflict(Error):
    """A deadlock or serialization failure reported by the database: retry."""


class LockLost(Error):
    """The lock is no longer held by this owner (its lease ran out and was taken over, an
    operator released it, its session ended). The critical section may have overlapped
    another holder's: a fenced write with the grant's token is refused."""


class SchemaMissing(Error):
    """The lock tables are missing: run ``sqlock migrate`` (or :meth:`Database.migrate`)."""


class SchemaMismatch(Error):
    """The lock tables are of a version this library does not know."""


class Unsupported(Error):
    """The backend or strategy cannot do what was asked."""


class TopologyUnsafe(Error):
    """The database's replication cannot keep this lock safe (a read-only standby, ...)."""


class BackendError(Error):
    """Another database error: see :attr:`sqlstate` and :attr:`native_code`."""


class Canceled(Error):
    """A wait was cancelled (the asyncio layer turns it into ``CancelledError``)."""


class OutOfMemory(Error, MemoryError):
    """The library ran out of memory."""


class InternalError(Error):
    """An unexpected failure inside sqlock: a bug, please report it."""


class InheritedHandle(Error):
    """An object made before ``fork()`` was used in the child: it belongs to the parent,
    whose grants a child never releases or renews. Make new ones in the child."""


_BY_CODE: Dict[int, Type[Error]] = {
    -1: InvalidArgument, -2: ConnectionFailed, -3: Timeout, -4: Conflict, -5: LockLost,
    -6: SchemaMissing, -7: SchemaMismatch, -8: Unsupported, -9: TopologyUnsafe,
    -10: BackendError, -11: Canceled, -12: OutOfMemory, -99: InternalError,
}


def _from_c(code: int, message: str, sqlstate: str, native_code: int, backend: str,
            retryable: int, server_full: int) -> Error:
    """The exception for a failure of the C layer (registered as its error factory)."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, code, sqlstate, native_code, backend, bool(retryable), bool(server_full))


_sqlock.set_error_factory(_from_c)
