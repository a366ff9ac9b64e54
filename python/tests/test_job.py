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


def test_list_jobs_shows_every_job_with_its_counts(db, name):
    periodic = sqlock.Job(db, name + ":p", period=3600)
    assert periodic.run(lambda ctx: 3).outcome == sqlock.JobOutcome.FAILED
    assert periodic.run(lambda ctx: None).outcome == sqlock.JobOutcome.SUCCEEDED
    assert periodic.run(lambda ctx: None).outcome == sqlock.JobOutcome.SKIPPED
    named = sqlock.Job(db, name + ":n", slot="2026-11-22")
    assert named.run(lambda ctx: None).outcome == sqlock.JobOutcome.SUCCEEDED
    jobs = {j.name: j for j in sqlock.list_jobs(db)}
    assert [j.name for j in db.list_jobs()] == [j.name for j in sqlock.list_jobs(db)]
    p, n = jobs[name + ":p"], jobs[name + ":n"]
    assert isinstance(p, sqlock.JobInfo)
    assert p.period == 3600.0 and n.period is None
    assert (p.succeeded, p.failed, p.lost, p.abandoned, p.skipped) == (1, 1, 0, 0, 1)
    assert (n.succeeded, n.failed) == (1, 0)
    assert p.last_outcome == "succeeded" and p.running_since is None
    assert p.slot_done and not p.overdue
    assert p.first_fired <= p.last_fired <= p.now
    assert p.last_success_started is not None and p.last_success_ended is not None
    assert p.last_success_started <= p.last_success_ended <= p.now
    assert not n.slot_done and not n.overdue  # no period: neither applies
    names = [j.name for j in sqlock.list_jobs(db)]
    assert names == sorted(names)
