"""Every primitive from asyncio: ``async with``, the loop never blocked, and cancellation that
never leaves a lock held."""
from __future__ import annotations

import asyncio
import os
import random
import threading
from typing import Dict, List

import pytest

import sqlock


async def ticking(seconds: float) -> int:
    """How many 10 ms ticks the loop managed in ``seconds`` (it is not blocked if many)."""
    ticks = 0
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        await asyncio.sleep(0.01)
        ticks += 1
    return ticks


def test_async_with_every_primitive(url, name):
    async def main():
        db = await sqlock.connect_async(url)
        m = sqlock.Mutex(db, name + ":m")
        async with m:
            assert m.owns_lock() and m.token > 0
        assert not m.owns_lock()
        s = sqlock.Semaphore(db, name + ":s", 2)
        async with s:
            assert s.owns_permit() and s.permit in (0, 1)
        rw = sqlock.SharedMutex(db, name + ":rw")
        async with rw.shared() as token:
            assert token > 0 and rw.owns_shared()
        async with rw.exclusive() as token:
            assert token > 0 and rw.owns_lock()
        election = sqlock.LeaderElection(db, name + ":le")
        async with election:
            assert election.is_leader()
        assert not election.is_leader()
        db.close()

    asyncio.run(main())


def test_waiting_never_blocks_the_loop(db, name):
    holder = sqlock.Mutex(db, name)
    holder.acquire()

    async def main():
        waiter = sqlock.Mutex(db, name)
        got, ticks = await asyncio.gather(waiter.acquire_async(timeout=1.0), ticking(1.0))
        assert got is False
        assert ticks > 50

    asyncio.run(main())
    holder.release()


def test_tasks_sharing_one_object_take_turns(db, name):
    m = sqlock.Mutex(db, name)
    inside, most, tokens = [0], [0], []

    async def worker():
        for _ in range(3):
            async with m:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                tokens.append(m.token)
                await asyncio.sleep(0.01)
                inside[0] -= 1

    async def main():
        await asyncio.gather(*(worker() for _ in range(4)))

    asyncio.run(main())
    assert most[0] == 1
    assert tokens == sorted(tokens) and len(set(tokens)) == 12


def test_cancelled_waiter_leaves_nothing_held(db, name):
    holder = sqlock.Mutex(db, name)

    async def main():
        waiter = sqlock.Mutex(db, name)
        await holder.acquire_async()
        task = asyncio.create_task(waiter.acquire_async())
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await holder.release_async()
        probe = sqlock.Mutex(db, name)
        assert await probe.acquire_async(timeout=2)  # the cancelled waiter holds nothing
        await probe.release_async()
        assert not waiter.owns_lock()

    asyncio.run(main())


def test_cancel_racing_the_grant_never_leaves_it_held(db, name):
    """The holder releases at random moments around the waiter's cancel: whichever wins, the
    lock is free afterwards (a grant that landed after the cancel was given back)."""
    rng = random.Random(36)

    async def round_(i):
        holder, waiter = sqlock.Mutex(db, name), sqlock.Mutex(db, name)
        await holder.acquire_async()
        task = asyncio.create_task(waiter.acquire_async())
        await asyncio.sleep(0.05)
        release = asyncio.create_task(holder.release_async())
        await asyncio.sleep(rng.uniform(0, 0.05))
        task.cancel()
        try:
            await task
            await waiter.release_async()  # it won before the cancel: ours to release
        except asyncio.CancelledError:
            pass
        await release
        probe = sqlock.Mutex(db, name)
        assert await probe.acquire_async(timeout=0), f"round {i}: the lock was left held"
        await probe.release_async()

    async def main():
        for i in range(8):
            await round_(i)

    asyncio.run(main())


def test_asyncio_timeout_turns_into_timeout_error(db, name):
    holder = sqlock.Mutex(db, name)
    holder.acquire()

    async def main():
        waiter = sqlock.Mutex(db, name)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await waiter.acquire_async()

    asyncio.run(main())
    holder.release()
    assert sqlock.Mutex(db, name).acquire(blocking=False)


def test_cancelled_campaign_resigns(db, name):
    async def main():
        leader = sqlock.LeaderElection(db, name)
        other = sqlock.LeaderElection(db, name)
        await leader.campaign_async()
        task = asyncio.create_task(other.campaign_async())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await leader.resign_async()
        assert not other.is_leader()

    asyncio.run(main())


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_many_waiting_tasks_cost_a_thread_per_name_not_per_task(db, name):
    """100 tasks on 10 names, a lock object each: libsqlock-c's waits without a thread queue
    this process's waiters per name behind one head, so waiting adds about a thread per name
    (and no Python thread); every task is granted in turn, tokens rising per name."""
    assert sqlock._sqlock.HAS_ASYNC  # the ci builds have the asynchronous locks
    names = [f"{name}:{i}" for i in range(10)]
    holders = [sqlock.Mutex(db, n) for n in names]
    for h in holders:
        assert h.acquire(timeout=5)
    tokens: Dict[str, List[int]] = {n: [] for n in names}

    async def task(lock_name):
        m = sqlock.Mutex(db, lock_name)
        async with m:
            tokens[lock_name].append(m.token)
            await asyncio.sleep(0.002)

    async def main():
        python_threads, before = threading.active_count(), os_threads()
        # Half of the tasks (every name has its head then), then the other half: the second
        # half adds no thread (SQLite keeps a few more per name than the other backends).
        tasks = [asyncio.create_task(task(names[i % 10])) for i in range(50)]
        await asyncio.sleep(0.5)
        half = os_threads()
        tasks += [asyncio.create_task(task(names[i % 10])) for i in range(50, 100)]
        await asyncio.sleep(0.5)
        waiting = os_threads()
        assert threading.active_count() == python_threads
        assert waiting - half <= 2, f"{before} threads, {half} with 50 waiting, {waiting} with 100"
        assert waiting - before <= 2 * len(names) + 6, f"{before} threads, {waiting} waiting"
        for h in holders:
            h.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 120)

    asyncio.run(main())
    for n in names:
        assert len(tokens[n]) == 10 and tokens[n] == sorted(set(tokens[n]))
