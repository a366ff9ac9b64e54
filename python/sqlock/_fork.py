"""What a child process does with the sqlock objects it inherits through ``fork()``: nothing.

fork() copies the parent's memory, but not its threads: the child has no renewal thread, and
its copies of the parent's connections are the parent's sockets. A child that released,
renewed or even closed an inherited lock would act on the parent's grant. So, in the child,
right after fork() (``os.register_at_fork``), every live object drops its C handle without
closing it: the parent's grants and connections are never touched from the child, and using
such an object raises :class:`sqlock.InheritedHandle`. The child makes new objects of its own
(a new connection; the core gives the child a new owner identity).
"""
from __future__ import annotations

import os
import weakref
from typing import Protocol


class Inheritable(Protocol):
    """An object holding a C handle that a forked child must drop."""

    def _forget_after_fork(self) -> None:
        """Drops the handle without closing it; later use raises InheritedHandle."""


_live: "weakref.WeakSet[Inheritable]" = weakref.WeakSet()


def track(obj: Inheritable) -> None:
    """Registers ``obj`` to be dropped in the child of a later fork()."""
    _live.add(obj)


def _after_in_child() -> None:
    for obj in list(_live):
        obj._forget_after_fork()
    _live.clear()


os.register_at_fork(after_in_child=_after_in_child)
