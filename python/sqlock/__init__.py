"""sqlock: distributed locks in the SQL database you already have (PostgreSQL, MySQL/MariaDB,
SQLite), from Python, synchronous and asyncio.

The same locks as the C++ library, the C API and ``sqlock run``, over libsqlock-c: they
exclude each other and share one sequence of fencing tokens per name.

    import sqlock
    db = sqlock.connect("postgresql://app@db/app")
    db.migrate()
    with sqlock.Mutex(db, "reports:nightly", ttl=30, renew=True) as lock:
        write_report(fence=lock.token)

See docs/site/guides/python.md.
"""
from . import _sqlock
from .database import Database, connect, connect_async
from .errors import (BackendError, Canceled, Conflict, ConnectionFailed, Error,
                     InheritedHandle, InternalError, InvalidArgument, LockLost, OutOfMemory,
                     SchemaMismatch, SchemaMissing, Timeout, TopologyUnsafe, Unsupported)
from .events import AtRiskEvent, Event, LossReason, LostEvent
from .job import Job, JobContext, JobOutcome, JobResult
from .leader import LeaderElection, LeaderInfo
from .mutex import Mutex
from .semaphore import Semaphore
from .shared_mutex import Mode, SharedMutex
from .status import JobInfo, JobRun, LockStatus, Waiter, job_history, list_jobs, status
from .strategy import Strategy

#: The sqlock release of the loaded library ("0.2.0").
__version__ = _sqlock.version()
#: The C API version of the loaded libsqlock-c (major * 1000 + minor).
C_API_VERSION = _sqlock.api_version()

__all__ = [
    "connect", "connect_async", "Database", "status", "job_history", "LockStatus", "Waiter",
    "JobRun", "JobInfo", "list_jobs", "Mutex", "Semaphore", "SharedMutex", "Mode",
    "LeaderElection", "LeaderInfo", "Job", "JobContext", "JobOutcome", "JobResult",
    "Strategy", "LossReason", "LostEvent", "AtRiskEvent", "Event", "Error", "InvalidArgument",
    "ConnectionFailed", "Timeout", "Conflict", "LockLost", "SchemaMissing", "SchemaMismatch",
    "Unsupported", "TopologyUnsafe", "BackendError", "Canceled", "OutOfMemory",
    "InternalError", "InheritedHandle",
]
