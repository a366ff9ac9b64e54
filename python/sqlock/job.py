"""Scheduled jobs: a job every host of a fleet fires, that succeeds at most once per slot."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, List, Optional, Union

from . import _fork, _sqlock
from ._durations import Duration, to_ms
from .database import Database
from .errors import InheritedHandle, InvalidArgument
from .status import JobRun, job_history
from .strategy import Strategy, strategy_value

__all__ = ["Job", "JobOutcome", "JobResult", "JobContext"]

#: What a job's function is handed while it runs: ``token`` (the attempt's fencing token),
#: ``slot`` (the slot key), ``stop_requested()`` (True once the job's lock was lost: stop),
#: ``set_message(text)`` (recorded with the attempt in the ledger).
JobContext = _sqlock.JobContext


class JobOutcome(enum.IntEnum):
    """How one firing ended (the C API's ``sqlock_job_outcome``)."""

    SUCCEEDED = 0  #: ran here and succeeded: the slot is done
    FAILED = 1  #: ran here and failed: another firing may take over
    LOST = 2  #: the lock was lost while the job ran
    ABANDONED = 3  #: (ledger only) the runner vanished
    SKIPPED = 4  #: the slot was already done: it did not run here
    NOT_GRANTED = 5  #: another run held the lock past the wait: it did not run


@dataclass(frozen=True)
class JobResult:
    """The outcome of :meth:`Job.run`."""

    outcome: JobOutcome
    token: int  #: this firing's grant (0 when not granted)
    takeover: bool  #: it ran a slot an earlier attempt had failed
    exit_status: int  #: ran: what the function returned (0: success)
    duration: float  #: ran: the attempt's seconds (database clock)
    slot: str  #: the slot decided on ("" when not granted)
    done_by_pid: int  #: skipped: the pid of the successful attempt
    done_by_token: int  #: skipped: its token
    done_by_host: str  #: skipped: its host
    message: str  #: lost: why; failed: the function's message


class Job:
    """A job named ``name`` that succeeds at most once per slot, however many hosts fire it
    (docs: guides/scheduled-jobs.md): once per ``period`` (seconds or timedelta, 1 s to 366
    days), or once per caller-named ``slot`` ("2026-11-22", a batch id). ``wait``: how long a
    firing waits for a run in progress elsewhere (default: one period; 0: one try). The job
    runs under a renewed lease (``strategy`` unique_key or optimistic_version, ``ttl``)."""

    def __init__(self, db: Database, name: str, *, period: Optional[Duration] = None,
                 slot: Optional[str] = None, wait: Optional[Duration] = None,
                 strategy: Union[Strategy, str] = Strategy.UNIQUE_KEY,
                 ttl: Optional[Duration] = None) -> None:
        """Validates (InvalidArgument; select_for_update: Unsupported); does not contact the
        database. Needs a period or a slot."""
        if period is None and slot is None:
            raise InvalidArgument("a job needs a period or a slot", -1)
        self.name = name
        self._db = db
        self._c: Optional[_sqlock.Job] = _sqlock.Job(
            db.handle, name, 0 if period is None else to_ms(period, "period"), slot,
            -1 if wait is None else to_ms(wait, "wait"), strategy_value(strategy),
            0 if ttl is None else to_ms(ttl, "ttl"))
        self._inherited = False
        _fork.track(self)

    def run(self, fn: Callable[[JobContext], Optional[int]]) -> JobResult:
        """Fires the job: runs ``fn(context)`` on this thread unless the slot is done, and
        records the attempt in the ledger. ``fn`` returns None or 0 for success, another int
        for a failure status. An exception of ``fn`` is recorded as a failure (its text as
        the message) and then raised from here. One thread at a time per Job."""
        if self._inherited:
            raise InheritedHandle(f"job {self.name!r} was made before fork()", -1)
        if self._c is None:
            raise ValueError(f"job {self.name!r} is closed")
        raw = self._c.run(fn)
        return JobResult(JobOutcome(raw["outcome"]), raw["token"], raw["takeover"],
                         raw["exit_status"], raw["duration_ms"] / 1000.0, raw["slot"],
                         raw["done_by_pid"], raw["done_by_token"], raw["done_by_host"],
                         raw["message"])

    def history(self, limit: int = 20) -> List[JobRun]:
        """This job's newest ``limit`` attempts from the ledger, newest first (every runner's,
        on every host)."""
        return job_history(self._db, self.name, limit)

    def close(self) -> None:
        """Closes the handle."""
        if self._c is not None and not self._inherited:
            self._c.close()
        self._c = None

    def _forget_after_fork(self) -> None:
        self._inherited = True
        if self._c is not None:
            self._c.forget()
