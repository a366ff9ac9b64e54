"""Who holds what: :func:`status` (the lock rows, as ``sqlock status`` shows them) and
:func:`job_history` (a job's run ledger)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from .database import Database

__all__ = ["LockStatus", "Waiter", "JobRun", "status", "job_history"]


@dataclass(frozen=True)
class Waiter:
    """A caller the database shows waiting for a lock."""

    who: str  #: the waiting session, as the server names it
    waited_for: Optional[float]  #: seconds it has waited; None where the backend cannot tell
    position: Optional[int]  #: its place in line (1: next); None where there is no line


@dataclass(frozen=True)
class LockStatus:
    """One row of the lock table (the C API's ``sqlock_lock_info``), read on the database's
    clock. A semaphore or shared mutex has several rows (see ``role``)."""

    name: str  #: the name the application gave
    primitive: str  #: "mutex", "semaphore" or "shared_mutex"
    #: "" for a mutex; "permit K" or "permit queue" for a semaphore; "reader K",
    #: "reader queue" or "writer" for a shared mutex
    role: str
    strategy: str  #: "unique_key", "select_for_update" or "optimistic_version"
    #: True while held (a live lease, or a locked select_for_update row); None where the
    #: server hides row-lock holders (select_for_update on MariaDB without its lock monitor)
    held: Optional[bool]
    #: The holder's owner id "host:pid:nonce/handle"; None without one. A select_for_update
    #: holder is named as the server knows it: "host:pid" on SQLite, "connection N" on
    #: MariaDB. A lease that ran out unreleased keeps its last holder here.
    owner: Optional[str]
    host: Optional[str]  #: the holder's host name (None for select_for_update on MariaDB)
    pid: Optional[int]  #: the holder's process id
    #: Lease strategies: the fencing token of the current grant while held, else of the last
    #: one; None for select_for_update rows (their tokens are not stored in the row)
    token: Optional[int]
    hold_count: int  #: the holder's re-entrant hold count
    #: Seconds of lease left (negative once expired); None for select_for_update and rows
    #: without a holder
    lease_remaining: Optional[float]
    held_for: Optional[float]  #: seconds the current holder has held it; None when not held
    acquired_at: Optional[str]  #: UTC "YYYY-MM-DD HH:MM:SS.ffffff"
    expires_at: Optional[str]  #: UTC, same format; None without a lease
    #: Callers waiting for it, first in line first; None when the server does not show them
    waiters: Optional[List[Waiter]]

    @property
    def waiting(self) -> int:
        """How many callers the database shows waiting (0 also when it hides them)."""
        return len(self.waiters or [])

    @property
    def expired(self) -> bool:
        """A lease whose time ran out without a release (what ``reap`` deletes)."""
        return self.lease_remaining is not None and self.lease_remaining <= 0


@dataclass(frozen=True)
class JobRun:
    """One attempt in a job's ledger. Times are seconds since 1970 UTC, database clock."""

    name: str  #: the job name
    slot: str  #: the slot key it ran for
    token: int  #: the attempt's fencing token
    owner: str  #: the runner's owner id
    host: str  #: the runner's host name
    pid: int  #: the runner's process id
    period: Optional[float]  #: the period it was fired with, seconds (None: a named slot)
    started: float  #: when it started
    ended: Optional[float]  #: when it ended; None while running
    duration: Optional[float]  #: seconds it ran; None while running
    outcome: str  #: "running", "succeeded", "failed", "lost" or "abandoned"
    exit_status: Optional[int]  #: what the job returned; None while running or when killed
    signal: Optional[int]  #: the signal that killed a run (``sqlock run``), else None
    message: str  #: the job's message, or what happened (lost, abandoned)


@dataclass(frozen=True)
class JobInfo:
    """One job as ``sqlock jobs`` lists it. Times are seconds since 1970 UTC, database
    clock."""

    name: str  #: the job name
    period: Optional[float]  #: the period of its latest firing, seconds (None: named slots)
    first_fired: float  #: when it first fired
    last_fired: float  #: when it last fired
    last_outcome: Optional[str]  #: of the last ended attempt (None: none ended yet)
    last_started: Optional[float]  #: start of the last ended attempt
    last_duration: Optional[float]  #: its duration, seconds
    last_success_started: Optional[float]  #: start of the last success (None: never)
    last_success_ended: Optional[float]  #: end of the last success (None: never)
    succeeded: int  #: attempts that ended succeeded (these counters only grow)
    failed: int  #: attempts that ended failed
    lost: int  #: attempts that ended lost
    abandoned: int  #: attempts found abandoned by a later holder
    skipped: int  #: firings that found their slot done
    running_since: Optional[float]  #: start of an attempt running now (None: none)
    now: float  #: the database clock when this was read
    slot_done: bool  #: a success started less than one period ago (False without a period)
    overdue: bool  #: no success within 1.5 periods (False without a period)


def _lock_status(row: Dict[str, Any]) -> LockStatus:
    holder = bool(row["owner"])
    waiters = row["waiters"]
    return LockStatus(
        name=row["name"], primitive=row["primitive"], role=row["role"],
        strategy=row["strategy"], held=row["held"],
        owner=row["owner"] if holder else None, host=row["host"] or None,
        pid=row["pid"] or None, token=row["token"] or None, hold_count=row["hold_count"],
        lease_remaining=row["expires_in_ms"] / 1000.0 if row["has_lease"] else None,
        held_for=row["held_for_ms"] / 1000.0 if row["held"] else None,
        acquired_at=row["acquired_at"] or None, expires_at=row["expires_at"] or None,
        waiters=None if waiters is None else [
            Waiter(w["who"], None if w["waited_for_ms"] < 0 else w["waited_for_ms"] / 1000.0,
                   w["position"] or None) for w in waiters])


def _seconds(ms: Optional[int]) -> Optional[float]:
    return None if ms is None else ms / 1000.0


def _job_run(row: Dict[str, Any]) -> JobRun:
    return JobRun(
        name=row["name"], slot=row["slot"], token=row["token"], owner=row["owner"],
        host=row["host"], pid=row["pid"], period=_seconds(row["period_ms"] or None),
        started=row["started_ms"] / 1000.0, ended=_seconds(row["ended_ms"]),
        duration=_seconds(row["duration_ms"]), outcome=row["outcome"],
        exit_status=row["exit_status"], signal=row["signal"], message=row["message"])


def _job_info(row: Dict[str, Any]) -> JobInfo:
    ended = bool(row["last_outcome"])
    succeeded_ever = row["last_success_started_ms"] > 0
    return JobInfo(
        name=row["name"], period=_seconds(row["period_ms"] or None),
        first_fired=row["first_fired_ms"] / 1000.0, last_fired=row["last_fired_ms"] / 1000.0,
        last_outcome=row["last_outcome"] or None,
        last_started=row["last_started_ms"] / 1000.0 if ended else None,
        last_duration=row["last_duration_ms"] / 1000.0 if ended else None,
        last_success_started=_seconds(row["last_success_started_ms"] or None),
        last_success_ended=(row["last_success_ended_ms"] / 1000.0 if succeeded_ever
                            else None),
        succeeded=row["succeeded"], failed=row["failed"], lost=row["lost"],
        abandoned=row["abandoned"], skipped=row["skipped"],
        running_since=row["running_since_ms"] / 1000.0 if row["running"] else None,
        now=row["now_ms"] / 1000.0, slot_done=bool(row["slot_done"]),
        overdue=bool(row["overdue"]))


def status(db: "Database", name: Optional[str] = None) -> List[LockStatus]:
    """The lock rows of ``db`` ordered by name, or only those of the lock named ``name`` (a
    semaphore's permits and queue, a shared mutex's readers, writer and queue). One query
    (plus the server's view of waiters); blocks: in asyncio code,
    ``await asyncio.to_thread(sqlock.status, db)``."""
    return [_lock_status(row) for row in db.handle.status(name)]


def job_history(db: "Database", name: str, limit: int = 20) -> List[JobRun]:
    """The newest ``limit`` attempts of job ``name`` from the ledger, newest first (empty for
    a job that never ran). Any process may read any job's ledger."""
    return [_job_run(row) for row in db.handle.job_history(name, limit)]


def list_jobs(db: "Database") -> List[JobInfo]:
    """Every job that ever fired in ``db``, by name (what ``sqlock jobs`` lists; the C++
    ``sqlock::list_jobs``). One query; blocks: in asyncio code,
    ``await asyncio.to_thread(sqlock.list_jobs, db)``."""
    return [_job_info(row) for row in db.handle.list_jobs()]
