"""What every lock class shares: its C handle, waits (sync and asyncio), releases, events,
and what happens to it in a forked child. The public classes (Mutex, Semaphore,
SharedMutex, LeaderElection) name the operations."""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Union

from . import _fork, _sqlock
from ._aio import AsyncOwner, GrantOwner
from ._durations import Duration, optional_ms, wait_ms
from .database import Database
from .errors import InheritedHandle, LockLost
from .events import Event, from_c
from .strategy import Strategy, strategy_value

KIND_MUTEX, KIND_SEMAPHORE, KIND_SHARED_MUTEX, KIND_LEADER = 0, 1, 2, 3


class LockBase:
    """One C lock handle and the bookkeeping around it."""

    def __init__(self, db: Database, name: str, kind: int, *, count: int = 0,
                 strategy: Union[Strategy, str, int] = Strategy.UNIQUE_KEY,
                 ttl: Optional[Duration] = None, renew: bool = False,
                 retry_min: Optional[Duration] = None,
                 retry_max: Optional[Duration] = None) -> None:
        """Opens the handle: validates the name and options (InvalidArgument) and the
        strategy against the backend (Unsupported). Does not contact the database."""
        self.name = name
        self._db = db
        self._c: Optional[_sqlock.Lock] = _sqlock.Lock(
            db.handle, kind, name, count, strategy_value(strategy), optional_ms(ttl, "ttl"),
            optional_ms(retry_min, "retry_min"), optional_ms(retry_max, "retry_max"), renew)
        self._inherited = False
        self._local = threading.local()
        self._async: Union[AsyncOwner, GrantOwner] = \
            GrantOwner(name) if _sqlock.HAS_ASYNC else AsyncOwner(f"{name}"[:40])
        _fork.track(self)

    # ------------------------------------------------------------ the handle

    @property
    def _h(self) -> _sqlock.Lock:
        if self._inherited:
            raise InheritedHandle(f"{self.name!r} was made before fork(): it belongs to the "
                                  "parent process, whose grants a child never touches", -1)
        if self._c is None:
            raise ValueError(f"{self.name!r} is closed")
        return self._c

    def _check_usable(self) -> None:
        """Raises InheritedHandle in a forked child and ValueError once closed."""
        _ = self._h

    def _forget_after_fork(self) -> None:
        """In a forked child: drops the handle without closing (releasing) it."""
        self._inherited = True
        self._async.forget()
        if self._c is not None:
            self._c.forget()

    def close(self) -> None:
        """Closes the handle: what its threads still hold is released first (blocks for
        that). No other thread may be inside a call on it."""
        self._async.shutdown()
        if self._c is not None and not self._inherited:
            self._c.close()
        self._c = None

    # ------------------------------------------------------------ sync waits

    def _held(self) -> Dict[bool, List[int]]:
        """The calling thread's grants per mode (True: shared): a stack of tokens."""
        held = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = {False: [], True: []}
        return held

    def _take(self, shared: bool, timeout: Optional[Duration], blocking: bool) -> bool:
        """Waits for a grant on the calling thread; on the main thread the signals Python
        handles interrupt it (Ctrl-C: KeyboardInterrupt, nothing held)."""
        main = threading.current_thread() is threading.main_thread()
        token = self._h.acquire(shared, wait_ms(timeout, blocking), main, None)
        if token is None:
            return False
        self._held()[shared].append(token)
        return True

    def _give_back(self, shared: bool) -> None:
        """Releases one hold of the calling thread; raises LockLost if it was lost (nothing
        is held afterwards either way)."""
        h = self._h
        try:
            h.release(shared)
        finally:
            stack = self._held()[shared]
            if stack:
                stack.pop()

    def _token(self, shared: bool) -> int:
        """The token of the calling thread's grant (else of the asyncio grant)."""
        self._check_usable()
        stack = self._held()[shared]
        if stack:
            return stack[-1]
        if self._async.holding and self._async.shared == shared:
            return self._async.token  # type: ignore[return-value]
        raise LockLost(f"{self.name!r} is not held by this thread", -5)

    def _owns(self, shared: bool) -> bool:
        """Whether the calling thread (or this object's asyncio grant) holds it validly."""
        h = self._h
        if h.owns(shared):
            return True
        if not self._async.holding or self._async.shared != shared:
            return False
        if isinstance(self._async, GrantOwner):
            return self._async.owns()
        return bool(self._async.call(h.owns, shared))

    # ------------------------------------------------------------ asyncio waits

    async def _take_async(self, shared: bool, timeout: Optional[Duration]) -> bool:
        h, ms = self._h, wait_ms(timeout, True)
        if isinstance(self._async, GrantOwner):
            return await self._async.acquire(h, shared, ms)
        return await self._async.acquire(lambda cancel: h.acquire(shared, ms, False, cancel),
                                         lambda: h.release(shared), shared)

    async def _give_back_async(self) -> None:
        h = self._h
        if isinstance(self._async, GrantOwner):
            await self._async.release()
            return
        shared = self._async.shared
        await self._async.release(lambda: h.release(shared))

    # ------------------------------------------------------------ signals

    @property
    def lost(self) -> bool:
        """True once the current grant was reported lost (by sqlock's watchdog or renewal
        thread; also when its lease's local end passed)."""
        if isinstance(self._async, GrantOwner) and self._async.lost():
            return True
        return bool(self._h.flags()[0])

    @property
    def at_risk(self) -> bool:
        """True while renewals of the current grant are failing (see AtRiskEvent)."""
        return bool(self._h.flags()[1])

    def events(self) -> List[Event]:
        """The lost and at-risk events recorded since the last call, oldest first."""
        return from_c(self._h.events())

    def check(self) -> None:
        """Raises LockLost if the current grant was reported lost: call it before work that
        must not overlap another holder's."""
        if self.lost:
            raise LockLost(f"{self.name!r} was lost while held", -5)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    def __del__(self) -> None:
        try:
            self._async.shutdown(wait=False)
        except Exception:  # interpreter shutdown: nothing left to do
            pass

    def __getstate__(self) -> Any:
        raise TypeError(f"{type(self).__name__} objects cannot be pickled (they hold a "
                        "handle of this process): make one in the other process")
