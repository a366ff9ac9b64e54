"""Mutex from synchronous Python: grants, tokens, waits, re-entry, errors, durations, the GIL."""
from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Tuple, Union

import pytest

import sqlock
from conftest import backend


def test_with_block_holds_and_releases(db, name):
    m = sqlock.Mutex(db, name)
    with m as held:
        assert held is m
        assert m.owns_lock()
        assert m.token > 0
        assert m.hold_count == 1
    assert not m.owns_lock()
    assert m.hold_count == 0
    with pytest.raises(sqlock.LockLost):
        m.token


def test_tokens_strictly_increase(db, name):
    m = sqlock.Mutex(db, name)
    tokens = []
    for _ in range(3):
        assert m.acquire()
        tokens.append(m.token)
        m.release()
    assert tokens == sorted(set(tokens))


def test_second_owner_times_out_then_gets_it(db, name):
    holder, other = sqlock.Mutex(db, name), sqlock.Mutex(db, name)
    holder.acquire()
    started = time.monotonic()
    assert other.acquire(timeout=0.3) is False
    assert time.monotonic() - started >= 0.29
    assert other.acquire(blocking=False) is False
    holder.release()
    assert other.acquire(timeout=timedelta(seconds=10))
    other.release()


def test_reentrant_on_one_thread(db, name):
    m = sqlock.Mutex(db, name)
    with m:
        first = m.token
        with m:
            assert m.hold_count == 2
            assert m.token == first
        assert m.owns_lock()
    assert not m.owns_lock()


def test_a_grant_belongs_to_its_thread(db, name):
    m = sqlock.Mutex(db, name)
    m.acquire()
    seen = {}

    def other_thread():
        seen["owns"] = m.owns_lock()
        seen["got"] = m.acquire(timeout=0.2)

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen == {"owns": False, "got": False}
    m.release()


def test_release_without_holding_is_invalid(db, name):
    with pytest.raises(sqlock.InvalidArgument) as info:
        sqlock.Mutex(db, name).release()
    assert isinstance(info.value, ValueError)
    assert info.value.code_name == "invalid_argument"


def test_bad_options_and_names(db, name):
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Mutex(db, "")
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Mutex(db, name, ttl=-1)
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Mutex(db, name, ttl="30s")  # type: ignore[arg-type]  # refused at run time too
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Mutex(db, name, strategy="no_such_strategy")
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.Mutex(db, name).acquire(timeout=1, blocking=False)


def test_durations_as_seconds_or_timedelta(db, name):
    ttls: Tuple[Union[int, float, timedelta], ...] = (2, 2.5, timedelta(seconds=3))
    for ttl in ttls:
        m = sqlock.Mutex(db, f"{name}:{ttl}", ttl=ttl)
        with m:
            assert m.owns_lock()


def test_strategies_by_name_and_enum(db, name):
    strategies: Tuple[Union[str, sqlock.Strategy], ...] = ("unique_key",
                                                          sqlock.Strategy.OPTIMISTIC_VERSION)
    for strategy in strategies:
        with sqlock.Mutex(db, f"{name}:{strategy}", strategy=strategy) as m:
            assert m.owns_lock()


UNREACHABLE = {
    "sqlite": "sqlite:///no/such/directory/locks.db",
    "postgresql": "postgresql://nobody:pw@127.0.0.1:1/none",
    "mysql": "mysql://nobody:pw@127.0.0.1:1/none",
}


def test_unreachable_database_is_connection_failed():
    with pytest.raises(sqlock.ConnectionFailed) as info:
        sqlock.connect(UNREACHABLE[backend()], connect_timeout=1)
    assert isinstance(info.value, ConnectionError)
    assert info.value.retryable


def test_bad_url_is_invalid_argument():
    with pytest.raises(sqlock.InvalidArgument):
        sqlock.connect("nosuchdb://x")


def test_missing_tables_are_schema_missing(url, name):
    with sqlock.connect(url, table_prefix="sqlock_py_none_") as fresh:
        with pytest.raises(sqlock.SchemaMissing) as info:
            sqlock.Mutex(fresh, name).acquire(blocking=False)
    assert "migrate" in str(info.value)


def test_the_gil_is_released_while_waiting(db, name):
    holder = sqlock.Mutex(db, name)
    holder.acquire()
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    def waiter():
        sqlock.Mutex(db, name).acquire(timeout=1.0)

    t1, t2 = threading.Thread(target=ticker), threading.Thread(target=waiter)
    t1.start()
    t2.start()
    t2.join()
    stop.set()
    t1.join()
    holder.release()
    assert len(ticks) > 30  # the ticker ran all along the one-second wait


def test_threads_exclude_each_other(db, name):
    inside, overlaps, grants = [0], [0], []
    lock = threading.Lock()

    def worker():
        m = sqlock.Mutex(db, name)
        for _ in range(5):
            with m:
                with lock:
                    inside[0] += 1
                    overlaps[0] += inside[0] > 1
                    grants.append(m.token)
                time.sleep(0.005)
                with lock:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 0
    assert len(grants) == 15
    assert len(set(grants)) == 15


def test_reap_and_backend(db, name):
    assert db.backend in ("sqlite", "postgresql", "mysql")
    assert db.reap() >= 0


def test_closed_objects_refuse_use(db, name):
    m = sqlock.Mutex(db, name)
    m.close()
    with pytest.raises(ValueError):
        m.acquire()
