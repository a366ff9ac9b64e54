"""The distributed reader-writer lock."""
from __future__ import annotations

from typing import Any, Optional, Union

from ._durations import Duration
from ._lockbase import KIND_SHARED_MUTEX, LockBase
from .database import Database
from .strategy import Strategy

__all__ = ["SharedMutex", "Mode"]


class SharedMutex(LockBase):
    """Many readers or one writer of ``name`` (docs: guides/shared-mutex.md); writers are not
    starved. ``with rw.shared():`` reads, ``with rw.exclusive():`` (or ``with rw:``) writes;
    both work with ``async with``. No upgrade: a thread holding it shared cannot take it
    exclusively. Options as Mutex."""

    def __init__(self, db: Database, name: str, max_readers: int = 16, *,
                 strategy: Union[Strategy, str] = Strategy.UNIQUE_KEY,
                 ttl: Optional[Duration] = None, renew: bool = False,
                 retry_min: Optional[Duration] = None,
                 retry_max: Optional[Duration] = None) -> None:
        """``max_readers``: readers admitted at once, 1 to 1000. Does not contact the
        database."""
        super().__init__(db, name, KIND_SHARED_MUTEX, count=max_readers, strategy=strategy,
                         ttl=ttl, renew=renew, retry_min=retry_min, retry_max=retry_max)

    def acquire(self, timeout: Optional[Duration] = None, blocking: bool = True) -> bool:
        """Takes it exclusively (a writer), as Mutex.acquire()."""
        return self._take(False, timeout, blocking)

    def release(self) -> None:
        """Releases one exclusive hold, as Mutex.release()."""
        self._give_back(False)

    def acquire_shared(self, timeout: Optional[Duration] = None, blocking: bool = True) -> bool:
        """Takes it shared (a reader), as Mutex.acquire()."""
        return self._take(True, timeout, blocking)

    def release_shared(self) -> None:
        """Releases one shared hold, as Mutex.release()."""
        self._give_back(True)

    async def acquire_async(self, timeout: Optional[Duration] = None) -> bool:
        """Exclusive, from asyncio code (as Mutex.acquire_async())."""
        return await self._take_async(False, timeout)

    async def acquire_shared_async(self, timeout: Optional[Duration] = None) -> bool:
        """Shared, from asyncio code (as Mutex.acquire_async())."""
        return await self._take_async(True, timeout)

    async def release_async(self) -> None:
        """Releases what acquire_async() or acquire_shared_async() took."""
        await self._give_back_async()

    def owns_lock(self) -> bool:
        """True while held exclusively and certainly validly (see Mutex.owns_lock())."""
        return self._owns(False)

    def owns_shared(self) -> bool:
        """True while held shared and certainly validly."""
        return self._owns(True)

    def token(self, shared: bool = False) -> int:
        """The fencing token of the held grant of that mode; LockLost when none."""
        return self._token(shared)

    def shared(self) -> "Mode":
        """A context manager (``with`` and ``async with``) holding it shared."""
        return Mode(self, True)

    def exclusive(self) -> "Mode":
        """A context manager (``with`` and ``async with``) holding it exclusively."""
        return Mode(self, False)

    def __enter__(self) -> "SharedMutex":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    async def __aenter__(self) -> "SharedMutex":
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release_async()


class Mode:
    """One mode of a SharedMutex as a context manager; ``as`` gives the grant's token."""

    def __init__(self, lock: SharedMutex, shared: bool) -> None:
        self._lock = lock
        self._shared = shared

    def __enter__(self) -> int:
        self._lock._take(self._shared, None, True)
        return self._lock.token(self._shared)

    def __exit__(self, *exc: Any) -> None:
        self._lock._give_back(self._shared)

    async def __aenter__(self) -> int:
        await self._lock._take_async(self._shared, None)
        return self._lock.token(self._shared)

    async def __aexit__(self, *exc: Any) -> None:
        await self._lock._give_back_async()
