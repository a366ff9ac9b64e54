"""Taking and giving back a lock object's grants from asyncio tasks, without blocking the
event loop.

With libsqlock-c's waits without a thread (C API 1.2, ``_sqlock.HAS_ASYNC``): an acquire is
started with the object's handle and reported to a Notifier, one per event loop, whose pipe
the loop watches (``loop.add_reader``): libsqlock-c's completion callback (on its own thread,
without the GIL, running no Python code) queues the outcome and writes a byte; the loop's
reader callback drains the outcomes and resolves the tasks' futures. Waiting tasks cost no
thread of Python's: this process's waiters on one lock queue in libsqlock-c behind one head (a
worker thread and a connection per name). A grant belongs to its Grant object, not to a
thread. :class:`GrantOwner` does this.

A libsqlock-c built without asynchronous locks has no such waits: then each lock object used
from asyncio gets one worker thread of its own (a one-thread executor, made on first use)
that takes and releases the object's grants through the blocking calls, since a grant belongs
to the OS thread that took it. :class:`AsyncOwner` does this.

Either way, tasks that use one object queue in front of it (an ``asyncio.Lock``, the
"line"): one task at a time holds through one object, and in asyncio code a lock object is
not re-entrant.

Cancellation: a task cancelled while it waits cancels the acquire (``sqlock_acquire_cancel``,
or the worker's cancel token), then awaits its outcome; if the grant landed anyway, it gives
it back, and only then re-raises ``CancelledError``. A cancelled wait therefore never leaves
the lock held.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Optional, Tuple
from weakref import WeakKeyDictionary

from . import _sqlock
from .errors import InvalidArgument, LockLost

Take = Callable[[_sqlock.Cancel], Optional[int]]
GiveBack = Callable[[], None]


async def _settle(future: "asyncio.Future[Any]", on_cancel: Callable[[], None]) -> bool:
    """Awaits ``future`` to its end whatever happens to the awaiting task; calls ``on_cancel``
    at the first cancellation. Returns whether the task was cancelled meanwhile."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            if not cancelled:
                on_cancel()
            cancelled = True
        except BaseException:  # the future's own failure: its caller reads it
            pass
    return cancelled


def _quiet_result(future: "asyncio.Future[Any]") -> Any:
    """The future's result, or None when it failed (the failure is consumed)."""
    if future.cancelled() or future.exception() is not None:
        return None
    return future.result()


class AsyncOwner:
    """The worker thread and the line of one lock object's asyncio grants."""

    def __init__(self, label: str) -> None:
        """``label`` names the worker thread (``sqlock-<label>``)."""
        self._label = label
        self._executor: Optional[ThreadPoolExecutor] = None
        self._line: Optional[Tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = None
        #: True while an asyncio task holds a grant through this object
        self.holding = False
        #: the held grant's token (the term of a leader), while holding
        self.token: Optional[int] = None
        #: the mode held (True: shared), while holding
        self.shared = False

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"sqlock-{self._label}")
        return self._executor

    def _run(self, fn: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":
        return asyncio.get_running_loop().run_in_executor(self._pool(), fn, *args)

    def _line_now(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._line is None or self._line[0] is not loop:
            self._line = (loop, asyncio.Lock())
        return self._line[1]

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Runs ``fn(*args)`` on the worker thread and returns its result (blocking the
        caller: for quick local reads, such as whether the worker's grant is still valid)."""
        return self._pool().submit(fn, *args).result()

    async def acquire(self, take: Take, give_back: GiveBack, shared: bool = False) -> bool:
        """Waits in line, then runs ``take(cancel)`` on the worker: True once granted, False
        when not granted in time. On cancellation see the module's doc."""
        line = self._line_now()
        await line.acquire()
        try:
            token = await self._take(take, give_back)
        except BaseException:
            line.release()
            raise
        if token is None:
            line.release()
            return False
        self.holding, self.token, self.shared = True, token, shared
        return True

    async def _take(self, take: Take, give_back: GiveBack) -> Optional[int]:
        cancel = _sqlock.Cancel()
        future = self._run(take, cancel)
        if await _settle(future, cancel.request):
            if _quiet_result(future) is not None:  # granted after the cancel: give it back
                back = self._run(give_back)
                await _settle(back, lambda: None)
                _quiet_result(back)
            raise asyncio.CancelledError()
        token: Optional[int] = future.result()
        return token

    async def release(self, give_back: GiveBack) -> None:
        """Runs ``give_back()`` on the worker (to its end, even if the task is cancelled
        meanwhile: CancelledError is raised after it), then lets the next task in line.
        Raises what the release raises (LockLost: the grant was lost while held)."""
        if not self.holding or self._line is None:
            raise InvalidArgument("release without a grant taken in asyncio", -1)
        future = self._run(give_back)
        try:
            if await _settle(future, lambda: None):
                _quiet_result(future)
                raise asyncio.CancelledError()
            future.result()
        finally:
            self.holding, self.token = False, None
            self._line[1].release()

    def shutdown(self, wait: bool = True) -> None:
        """Stops the worker thread after what it is doing (waiting for that with ``wait``)."""
        if self._executor is not None:
            self._executor.shutdown(wait=wait)
        self._executor = None

    def forget(self) -> None:
        """In a forked child: the worker thread is gone; drop it without joining."""
        self._executor = None
        self.holding, self.token = False, None


# ------------------------------------------------------------------ waits without a thread

#: sqlock_code of a release whose grant turned out lost
_LOCK_LOST = -5


class _Waker:
    """One event loop's Notifier, and the futures of the operations in flight on it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.notifier = _sqlock.Notifier()
        self.futures: Dict[int, "asyncio.Future[int]"] = {}
        loop.add_reader(self.notifier.fileno(), self._ready)

    def _ready(self) -> None:
        """The reader callback: resolves the futures of the outcomes reported."""
        for op_id, code in self.notifier.drain():
            future = self.futures.pop(op_id, None)
            if future is not None and not future.done():
                future.set_result(code)

    def future(self, op_id: int) -> "asyncio.Future[int]":
        """The future of operation ``op_id`` (its code, once reported)."""
        future: "asyncio.Future[int]" = self.loop.create_future()
        self.futures[op_id] = future
        return future


_wakers: "WeakKeyDictionary[asyncio.AbstractEventLoop, _Waker]" = WeakKeyDictionary()


def _waker() -> _Waker:
    """The running loop's waker, made on first use."""
    loop = asyncio.get_running_loop()
    waker = _wakers.get(loop)
    if waker is None:
        waker = _wakers[loop] = _Waker(loop)
    return waker


class GrantOwner:
    """The line and the held Grant of one lock object's asyncio grants (waits without a
    thread)."""

    def __init__(self, label: str) -> None:
        """``label`` names the lock in messages."""
        self._label = label
        self._line: Optional[Tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = None
        self.grant: Optional[_sqlock.Grant] = None
        self.holding = False
        self.token: Optional[int] = None
        self.shared = False

    def _line_now(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._line is None or self._line[0] is not loop:
            self._line = (loop, asyncio.Lock())
        return self._line[1]

    async def acquire(self, lock: _sqlock.Lock, shared: bool, timeout_ms: int) -> bool:
        """Waits in line, then for a grant of ``lock``: True once granted, False when not
        granted in time. On cancellation see the module's doc."""
        line = self._line_now()
        await line.acquire()
        try:
            grant = await self._take(lock, shared, timeout_ms)
        except BaseException:
            line.release()
            raise
        if grant is None:
            line.release()
            return False
        self.grant, self.holding, self.shared = grant, True, shared
        self.token = grant.token()
        return True

    async def _take(self, lock: _sqlock.Lock, shared: bool,
                    timeout_ms: int) -> Optional[_sqlock.Grant]:
        waker = _waker()
        op = waker.notifier.acquire(lock, shared, timeout_ms)
        future = waker.future(op.id)
        if await _settle(future, op.cancel):
            try:
                grant = op.result()
            except Exception:  # cancelled (or failed): nothing held
                grant = None
            if grant is not None:  # granted before the cancel reached it: give it back
                try:
                    await self._give(grant)
                except Exception:  # lost meanwhile: nothing held either way
                    pass
            raise asyncio.CancelledError()
        return op.result()

    async def _give(self, grant: _sqlock.Grant) -> bool:
        """Releases ``grant`` on a sqlock thread, to its end whatever happens to the task;
        returns whether the task was cancelled meanwhile. Raises LockLost when the grant
        turned out lost."""
        waker = _waker()
        future = waker.future(waker.notifier.release(grant))
        cancelled = await _settle(future, lambda: None)
        if future.result() == _LOCK_LOST:
            raise LockLost(f"{self._label!r} was lost while held: the critical section may "
                           "have overlapped another holder's", _LOCK_LOST)
        return cancelled

    async def release(self) -> None:
        """Releases the held grant, then lets the next task in line (CancelledError is raised
        after the release when the task was cancelled meanwhile). Raises LockLost when the
        grant was lost while held."""
        if not self.holding or self.grant is None or self._line is None:
            raise InvalidArgument("release without a grant taken in asyncio", -1)
        grant, line = self.grant, self._line[1]
        try:
            cancelled = await self._give(grant)
        finally:
            self.grant, self.holding, self.token = None, False, None
            line.release()
        if cancelled:
            raise asyncio.CancelledError()

    def owns(self) -> bool:
        """Whether the held grant is certainly valid."""
        return self.grant is not None and self.grant.owns()

    def lost(self) -> bool:
        """Whether the held grant was reported lost."""
        return self.grant is not None and self.grant.lost_reason() != 0

    def shutdown(self, wait: bool = True) -> None:
        """Releases a grant still held (here, blocking, with ``wait``; else in the
        background)."""
        grant, self.grant, self.holding, self.token = self.grant, None, False, None
        if grant is not None and wait:
            try:
                grant.release()
            except Exception:  # lost: nothing held either way
                pass

    def forget(self) -> None:
        """In a forked child: drop the parent's grant unreleased."""
        if self.grant is not None:
            self.grant.forget()
        self.grant, self.holding, self.token = None, False, None
