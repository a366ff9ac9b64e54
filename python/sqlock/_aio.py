"""Taking and giving back a lock object's grants from asyncio tasks, without blocking the
event loop.

libsqlock-c gives a grant to the OS thread that took it, and only that thread may release it.
So each lock object used from asyncio gets one worker thread of its own (a one-thread
executor, made on first use) that takes and releases all of the object's asyncio grants;
the event loop only awaits it. Tasks that use one object queue in front of it (an
``asyncio.Lock``, the "line"): one task at a time holds through one object, and in asyncio
code a lock object is not re-entrant.

Cancellation: a task cancelled while it waits asks the C API's cancel token to stop the wait
(``sqlock_cancel_request``), then awaits the worker's outcome; if the grant landed anyway, it
gives it back, and only then re-raises ``CancelledError``. A cancelled wait therefore never
leaves the lock held. (Until the core signals waits through an event fd, this is the pattern
the design notes recommend, docs/site/guides/python.md.)
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Tuple

from . import _sqlock
from .errors import InvalidArgument

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
