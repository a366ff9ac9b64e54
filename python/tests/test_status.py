"""``sqlock.status`` (who holds what, as ``sqlock status`` shows it) and a job's ledger
(``Job.history``, ``sqlock.job_history``), on the backend under test and every strategy."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Callable, Optional

import pytest

import sqlock
from conftest import backend

HERE = os.path.dirname(os.path.abspath(__file__))
STRATEGIES = ["unique_key", "select_for_update", "optimistic_version"]


def eventually(predicate: Callable[[], bool], seconds: float) -> bool:
    """Polls ``predicate`` until it holds, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def row_of(db: sqlock.Database, name: str) -> Optional[sqlock.LockStatus]:
    rows = db.status(name)
    assert len(rows) <= 1, rows
    return rows[0] if rows else None


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_held_shows_holder_and_token_a_waiter_waits_then_free(db, url, name, strategy,
                                                              tmp_path):
    lock = sqlock.Mutex(db, name, strategy=strategy, ttl=30)
    with lock:
        ours = lock.token
        row = row_of(db, name)
        assert row is not None
        assert (row.name, row.primitive, row.role, row.strategy) == (name, "mutex", "",
                                                                     strategy)
        assert row.held is True
        assert row.pid == os.getpid()
        if backend() == "mysql" and strategy == "select_for_update":
            # MariaDB's lock monitor names the holder's connection and process, not its host.
            assert row.host is None and row.owner is not None
            assert row.owner.startswith("connection ")
        else:
            assert row.host == socket.gethostname()
            assert row.owner is not None and row.owner.startswith(
                f"{socket.gethostname()}:{os.getpid()}")
        if strategy == "select_for_update":
            assert row.token is None and row.lease_remaining is None
        else:
            assert row.token == ours
            assert row.lease_remaining is not None and 0 < row.lease_remaining <= 30
            assert row.expires_at is not None and not row.expired
        assert row.waiters == [] and row.waiting == 0

        # A Python waiter in another process (the server counts the holder's own process as
        # next in line, not as a waiter): one grant once we release.
        log = str(tmp_path / "waiter.log")
        waiter = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "py_contender.py"), "sync", url, name,
             "30000", "1", log, strategy])
        try:
            assert eventually(lambda: any(r.waiting for r in db.status(name)), 20), \
                db.status(name)
            seen = row_of(db, name)
            assert seen is not None and seen.held is True and seen.pid == os.getpid()
            assert seen.waiters and seen.waiters[0].who
        except BaseException:
            waiter.kill()
            raise
    assert waiter.wait(60) == 0
    with open(log, encoding="ascii") as f:
        token, pid = (int(v) for v in f.read().split())
    assert pid == waiter.pid
    if strategy != "select_for_update":
        assert token > ours

    # Free: the row is gone (unique_key deletes it) or shows no holder and no waiter.
    assert eventually(lambda: all(r.held is False for r in db.status(name)), 10)
    free = row_of(db, name)
    if free is not None:
        assert free.held_for is None and free.waiting == 0


def test_semaphore_rows_and_all_rows(db, name):
    sem = sqlock.Semaphore(db, name, 2, ttl=30)
    with sem:
        rows = sqlock.status(db, name)
        assert rows and all(r.name == name and r.primitive == "semaphore" for r in rows)
        held = [r for r in rows if r.held]
        assert len(held) == 1 and held[0].role.startswith("permit ")
        assert held[0].pid == os.getpid() and held[0].token == sem.token
        assert any(r.name == name for r in db.status())  # every row, this one among them
    assert db.status("no such lock " + name) == []


def test_job_ledger_records_runs(db, name):
    job = sqlock.Job(db, name, slot="first")
    assert job.run(lambda ctx: ctx.set_message("done")).outcome == sqlock.JobOutcome.SUCCEEDED
    job.close()
    failing = sqlock.Job(db, name, slot="second")
    assert failing.run(lambda ctx: 3).outcome == sqlock.JobOutcome.FAILED
    runs = failing.history()
    assert [r.slot for r in runs] == ["second", "first"]  # newest first
    second, first = runs
    assert (second.outcome, second.exit_status) == ("failed", 3)
    assert (first.outcome, first.exit_status, first.message) == ("succeeded", 0, "done")
    assert first.token < second.token
    for run in runs:
        assert run.name == name and run.pid == os.getpid() and run.host == socket.gethostname()
        assert run.ended is not None and run.duration is not None and run.ended >= run.started
        assert run.signal is None and run.period is None
    assert sqlock.job_history(db, name, limit=1) == runs[:1]
    assert db.job_history("never ran " + name) == []
    with pytest.raises(ValueError):
        db.job_history(name, limit=0)
    failing.close()


def test_status_from_asyncio(url, name):
    async def main() -> None:
        db = await sqlock.connect_async(url)
        async with sqlock.Mutex(db, name) as lock:
            rows = await asyncio.to_thread(sqlock.status, db, name)
            assert rows[0].held and rows[0].token == lock.token
        db.close()

    asyncio.run(main())
