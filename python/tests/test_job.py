"""Scheduled jobs from Python: once per slot, the outcome of every firing, failures recorded
and raised, and Python, C++ ... firings of one slot succeeding once."""
from __future__ import annotations

import threading

import pytest

import sqlock


def test_once_per_slot(db, name):
    job = sqlock.Job(db, name, slot="2026-11-22")
    ran = []

    def work(ctx):
        ran.append((ctx.token, ctx.slot))
        ctx.set_message("done")

    first = job.run(work)
    assert first.outcome == sqlock.JobOutcome.SUCCEEDED
    assert first.slot == "2026-11-22" and first.token == ran[0][0]
    again = sqlock.Job(db, name, slot="2026-11-22").run(work)
    assert again.outcome == sqlock.JobOutcome.SKIPPED
    assert again.done_by_token == first.token
    assert len(ran) == 1


def test_a_failure_is_recorded_then_taken_over(db, name):
    job = sqlock.Job(db, name, period=3600)
    failed = job.run(lambda ctx: 3)
    assert failed.outcome == sqlock.JobOutcome.FAILED and failed.exit_status == 3
    retried = job.run(lambda ctx: None)
    assert retried.outcome == sqlock.JobOutcome.SUCCEEDED and retried.takeover


def test_an_exception_is_recorded_as_a_failure_and_raised(db, name):
    job = sqlock.Job(db, name, slot="s1")

    def boom(ctx):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        job.run(boom)
    assert job.run(lambda ctx: 0).takeover  # the raised attempt was a failure in the ledger


def test_the_context_is_valid_only_while_the_job_runs(db, name):
    kept = []
    sqlock.Job(db, name, slot="s").run(lambda ctx: kept.append(ctx))
    with pytest.raises(ValueError):
        kept[0].token


def test_concurrent_firings_of_one_slot_succeed_once(db, name):
    runs, results = [], []

    def fire():
        job = sqlock.Job(db, name, slot="batch-7", wait=30)
        results.append(job.run(lambda ctx: runs.append(ctx.token)))

    threads = [threading.Thread(target=fire) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = sorted(r.outcome for r in results)
    assert len(runs) == 1
    assert outcomes == [sqlock.JobOutcome.SUCCEEDED] + [sqlock.JobOutcome.SKIPPED] * 3


def test_a_job_needs_a_period_or_a_slot(db, name):
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Job(db, name)
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Job(db, name, period=0.5)  # under a second
