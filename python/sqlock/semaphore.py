"""The distributed counting semaphore."""
from __future__ import annotations

from typing import Any, Optional, Union

from ._aio import AsyncOwner, GrantOwner
from ._durations import Duration
from ._lockbase import KIND_SEMAPHORE, LockBase
from .database import Database
from .strategy import Strategy

__all__ = ["Semaphore"]


class Semaphore(LockBase):
    """At most ``permits`` holders of ``name`` at once, across threads, processes and hosts
    (docs: guides/semaphores.md). Each permit is a lease with its own fencing token. A thread
    holds at most one permit of an object (acquiring again re-enters it); asyncio tasks take
    theirs one at a time per object, as Mutex. Options as Mutex."""

    def __init__(self, db: Database, name: str, permits: int, *,
                 strategy: Union[Strategy, str] = Strategy.UNIQUE_KEY,
                 ttl: Optional[Duration] = None, renew: bool = False,
                 retry_min: Optional[Duration] = None,
                 retry_max: Optional[Duration] = None) -> None:
        """``permits``: 1 to 1000; ``name``: at most 239 bytes. Does not contact the
        database."""
        super().__init__(db, name, KIND_SEMAPHORE, count=permits, strategy=strategy, ttl=ttl,
                         renew=renew, retry_min=retry_min, retry_max=retry_max)
        self.permits = permits

    def acquire(self, timeout: Optional[Duration] = None, blocking: bool = True) -> bool:
        """Takes a permit for the calling thread, as Mutex.acquire()."""
        return self._take(False, timeout, blocking)

    def release(self) -> None:
        """Gives back one hold of the calling thread's permit, as Mutex.release()."""
        self._give_back(False)

    async def acquire_async(self, timeout: Optional[Duration] = None) -> bool:
        """Takes a permit from asyncio code, as Mutex.acquire_async()."""
        return await self._take_async(False, timeout)

    async def release_async(self) -> None:
        """Gives back the permit acquire_async() took."""
        await self._give_back_async()

    @property
    def token(self) -> int:
        """The fencing token of the held permit. Raises LockLost when none is held."""
        return self._token(False)

    @property
    def permit(self) -> int:
        """Which permit (0 to permits - 1) the calling thread holds; LockLost when none."""
        if not self._held()[False] and self._async.holding:
            if isinstance(self._async, GrantOwner) and self._async.grant is not None:
                return self._async.grant.permit()
            if isinstance(self._async, AsyncOwner):
                return int(self._async.call(self._h.details))
        return int(self._h.details())

    def owns_permit(self) -> bool:
        """True while a permit is held (calling thread, or this object's asyncio grant) and
        certainly valid."""
        return self._owns(False)

    def __enter__(self) -> "Semaphore":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    async def __aenter__(self) -> "Semaphore":
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release_async()
