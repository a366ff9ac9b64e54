"""Every primitive from asyncio: ``async with``, the loop never blocked, and cancellation that
never leaves a lock held."""
from __future__ import annotations

import asyncio
import random

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
