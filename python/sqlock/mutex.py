"""The distributed mutex."""
from __future__ import annotations

from typing import Any, Optional, Union

from ._durations import Duration
from ._lockbase import KIND_MUTEX, LockBase
from .database import Database
from .events import LossReason
from .strategy import Strategy

__all__ = ["Mutex"]


class Mutex(LockBase):
    """A lock named ``name`` in ``db``: mutual exclusion among all threads and processes, on
    every host, that share the database, and with C, C++ and ``sqlock run`` callers of the
    same name. Each grant carries a fencing ``token``, strictly greater than every earlier
    grant's of that name.

    A grant belongs to the thread that took it (release it on that thread), which may take
    it again (re-entrant: as many releases). In asyncio code (``async with``,
    :meth:`acquire_async`) grants are taken on a worker thread of the object's own, one task
    at a time per object.

    ``ttl``: the lease length on the database clock (seconds or timedelta; default 30 s). A
    holder that neither releases nor renews within it loses the lock; ``renew=True`` renews
    it every ttl/3 from a background thread while held. ``strategy``: see Strategy.
    """

    def __init__(self, db: Database, name: str, *,
                 strategy: Union[Strategy, str] = Strategy.UNIQUE_KEY,
                 ttl: Optional[Duration] = None, renew: bool = False,
                 retry_min: Optional[Duration] = None,
                 retry_max: Optional[Duration] = None) -> None:
        """Validates the name (1 to 255 bytes) and options; does not contact the database."""
        super().__init__(db, name, KIND_MUTEX, strategy=strategy, ttl=ttl, renew=renew,
                         retry_min=retry_min, retry_max=retry_max)

    def acquire(self, timeout: Optional[Duration] = None, blocking: bool = True) -> bool:
        """Takes the lock for the calling thread: True once granted; False when ``timeout``
        (seconds or timedelta) passed first, or, with ``blocking=False``, when one attempt
        found it taken. The GIL is released while waiting; on the main thread Ctrl-C ends
        the wait with KeyboardInterrupt and nothing held. Raises LockLost for a re-entry of
        a grant that was lost, and Error for a failure of the database."""
        return self._take(False, timeout, blocking)

    def release(self) -> None:
        """Releases one hold of the calling thread. Raises LockLost when the grant turned out
        lost (the critical section may have overlapped another holder's), InvalidArgument
        when the thread holds nothing. Nothing is held afterwards either way."""
        self._give_back(False)

    async def acquire_async(self, timeout: Optional[Duration] = None) -> bool:
        """:meth:`acquire` for asyncio: the event loop runs on while it waits. A task
        cancelled meanwhile never leaves the lock held (a grant that lands after the cancel
        is released), then CancelledError propagates."""
        return await self._take_async(False, timeout)

    async def release_async(self) -> None:
        """Releases the grant :meth:`acquire_async` took (as :meth:`release`)."""
        await self._give_back_async()

    @property
    def token(self) -> int:
        """The fencing token of the calling thread's grant (or of this object's asyncio
        grant). Raises LockLost when it holds none."""
        return self._token(False)

    def owns_lock(self) -> bool:
        """True while the calling thread (or this object's asyncio grant) holds the lock and
        the grant is certainly still valid: False once lost, and once the lease's local end
        has passed, before anyone else can have been granted it."""
        return self._owns(False)

    @property
    def lost_reason(self) -> LossReason:
        """Why the calling thread's current grant was lost (NONE while fine or not held)."""
        return LossReason(self._h.details()[1])

    @property
    def hold_count(self) -> int:
        """The calling thread's re-entrant hold count (0 when not held)."""
        return int(self._h.details()[2])

    def __enter__(self) -> "Mutex":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    async def __aenter__(self) -> "Mutex":
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.release_async()
