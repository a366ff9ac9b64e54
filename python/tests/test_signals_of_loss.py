"""The at-risk and lost signals, and the fenced write of a holder that was paused past its
lease: it is told it lost the lock, and its write is refused."""
from __future__ import annotations

import subprocess
import time

import pytest

import sqlock
from conftest import helper
from fenced import FencedRow


def wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_paused_holder_is_told_and_its_fenced_write_refused(db, url, name):
    row = FencedRow(db, url, name)
    try:
        holder = sqlock.Mutex(db, name, ttl=1.0)  # no renewal: a pause past 1 s loses it
        holder.acquire()
        old = holder.token
        assert row.write(1, old)
        time.sleep(1.5)  # "paused" past the TTL
        assert wait_for(lambda: holder.lost, 2)
        assert not holder.owns_lock()
        assert holder.lost_reason == sqlock.LossReason.LOST
        events = holder.events()
        assert any(isinstance(e, sqlock.AtRiskEvent) and e.at_risk for e in events)
        lost = [e for e in events if isinstance(e, sqlock.LostEvent)]
        assert len(lost) == 1 and lost[0].token == old and lost[0].name == name
        with pytest.raises(sqlock.LockLost):
            holder.check()
        successor = sqlock.Mutex(db, name)
        assert successor.acquire(timeout=10)  # takes it over
        assert successor.token > old
        assert not row.write(2, old)  # the paused holder's write: refused
        assert row.write(3, successor.token)
        assert row.value() == 3
        with pytest.raises(sqlock.LockLost):
            holder.release()
        successor.release()
    finally:
        row.close()


def test_renewed_lock_survives_pauses_longer_than_its_ttl(db, name):
    m = sqlock.Mutex(db, name, ttl=1.0, renew=True)
    with m:
        time.sleep(2.0)
        assert m.owns_lock() and not m.lost
        assert not any(isinstance(e, sqlock.LostEvent) for e in m.events())


def test_forced_release_ends_a_term_and_is_signalled(db, url, name):
    """An operator's ``sqlock release --force``: the leader's next renewal finds its lease
    gone, and the elector is told (lost, a LostEvent with its term)."""
    election = sqlock.LeaderElection(db, name, ttl=3.0)  # renewed every second
    assert election.campaign()
    term = election.term
    done = subprocess.run([helper("SQLOCK_CLI_PATH"), "--url", url, "release", name, "--force"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert wait_for(lambda: election.lost, 10)
    assert not election.is_leader()
    lost = [e for e in election.events() if isinstance(e, sqlock.LostEvent)]
    assert [e.token for e in lost] == [term]
