"""Leader election."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ._aio import GrantOwner
from ._durations import Duration
from ._lockbase import KIND_LEADER, LockBase
from .database import Database

__all__ = ["LeaderElection", "LeaderInfo"]


@dataclass(frozen=True)
class LeaderInfo:
    """The leader of an election as the database says."""

    term: int  #: the leader's term (its fencing token)
    pid: int  #: its process id
    id: str  #: its owner id, host:pid:nonce/handle
    host: str  #: its host name
    remaining: float  #: seconds until its lease ends unless renewed (database clock)
    leading_for: float  #: seconds this term has lasted


class LeaderElection(LockBase):
    """At most one leader at a time among the processes that share ``db``
    (docs: guides/leader-election.md). A leader renews its lease on its own; its ``term``
    (strictly increasing from one leader to the next) fences what it does. ``with election:``
    campaigns until elected and resigns at the end (also ``async with``).

    ``ttl``: the lease (default 10 s): a leader that stops renewing is replaced about one ttl
    after its last renewal. Losing leadership is signalled: :attr:`lost`, :meth:`events`.
    """

    def __init__(self, db: Database, name: str, *, ttl: Optional[Duration] = None,
                 retry_min: Optional[Duration] = None,
                 retry_max: Optional[Duration] = None) -> None:
        """An elector of election ``name``; it does not campaign yet."""
        super().__init__(db, name, KIND_LEADER, ttl=ttl, retry_min=retry_min,
                         retry_max=retry_max)

    def campaign(self, timeout: Optional[Duration] = None, blocking: bool = True) -> bool:
        """Campaigns until elected (True; at once when already leading) or until
        ``timeout`` (False). Ctrl-C and the GIL as Mutex.acquire()."""
        return self._take(False, timeout, blocking)

    def resign(self) -> None:
        """Gives up leadership (stop the work it guarded first); nothing when not leading."""
        self._h.release(False)
        self._held()[False].clear()

    async def campaign_async(self, timeout: Optional[Duration] = None) -> bool:
        """:meth:`campaign` for asyncio (a cancelled campaign that won resigns at once)."""
        return await self._take_async(False, timeout)

    async def resign_async(self) -> None:
        """Resigns what campaign_async() won."""
        await self._give_back_async()

    def _leads_async(self) -> bool:
        """Whether a term won by campaign_async() is held and certainly valid."""
        return isinstance(self._async, GrantOwner) and self._async.owns()

    def is_leader(self) -> bool:
        """True while this elector leads (a term won by campaign() or campaign_async())."""
        return bool(self._h.details()[0]) or self._leads_async()

    @property
    def term(self) -> int:
        """The term while leading, else 0."""
        term = int(self._h.details()[1])
        if term == 0 and self._leads_async():
            return self._async.token or 0
        return term

    def current(self) -> Optional[LeaderInfo]:
        """Who leads now, from the database (one SELECT); None when nobody does."""
        raw = self._h.current()
        if raw is None:
            return None
        return LeaderInfo(raw["term"], raw["pid"], raw["id"], raw["host"],
                          raw["remaining_ms"] / 1000.0, raw["leading_for_ms"] / 1000.0)

    def __enter__(self) -> "LeaderElection":
        self.campaign()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.resign()

    async def __aenter__(self) -> "LeaderElection":
        await self.campaign_async()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.resign_async()
