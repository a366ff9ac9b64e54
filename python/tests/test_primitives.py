"""Semaphore, SharedMutex and LeaderElection from synchronous Python."""
from __future__ import annotations

import threading
from typing import Dict

import pytest

import sqlock


def test_semaphore_admits_its_permits_and_no_more(db, name):
    a, b, c = (sqlock.Semaphore(db, name, 2) for _ in range(3))
    assert a.acquire() and b.acquire()
    assert {a.permit, b.permit} == {0, 1}
    assert a.token != b.token
    assert c.acquire(timeout=0.2) is False
    a.release()
    with c:
        assert c.owns_permit()
    b.release()


def test_semaphore_permits_are_validated(db, name):
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Semaphore(db, name, 0)


def test_shared_mutex_readers_share_writers_exclude(db, name):
    r1, r2, w = (sqlock.SharedMutex(db, name, 4) for _ in range(3))
    with r1.shared() as t1, r2.shared() as t2:
        assert t1 > 0 and t2 > 0
        assert r1.owns_shared() and r2.owns_shared()
        assert w.acquire(timeout=0.2) is False
    with w.exclusive() as token:
        assert w.owns_lock()
        assert token == w.token()
        assert r1.acquire_shared(timeout=0.2) is False


def test_shared_mutex_has_no_upgrade(db, name):
    rw = sqlock.SharedMutex(db, name)
    with rw.shared():
        with pytest.raises(sqlock.InvalidArgument):
            rw.acquire(timeout=0.1)


def test_leader_election_one_leader_terms_increase(db, name):
    a = sqlock.LeaderElection(db, name, ttl=5)
    b = sqlock.LeaderElection(db, name, ttl=5)
    assert a.campaign()
    assert a.is_leader() and a.term > 0
    assert b.campaign(timeout=0.3) is False
    info = b.current()
    assert info is not None and info.term == a.term and info.remaining > 0
    first = a.term
    a.resign()
    assert not a.is_leader() and a.term == 0
    with b:
        assert b.is_leader()
        assert b.term > first
    assert b.current() is None


def test_leader_from_another_thread(db, name):
    election = sqlock.LeaderElection(db, name)
    result: Dict[str, bool] = {}
    t = threading.Thread(target=lambda: result.update(won=election.campaign(timeout=5)))
    t.start()
    t.join()
    assert result["won"] and election.is_leader()  # any thread may ask, and resign
    election.resign()
