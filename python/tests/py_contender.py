"""Test helper process: takes lock NAME ITERATIONS times from Python and proves nobody else
was inside, as tests/support/contender.cpp does from C++ (the same arguments and log):

    py_contender.py sync|async URL NAME TTL_MS ITERATIONS LOG STRATEGY

While holding the lock it creates LOG.inside with O_EXCL (failing if another holder is in its
critical section), appends "token pid" to LOG, and removes the marker before releasing.
Exit codes: 0 ok, 3 overlap seen, 4 the release reported a failure, 2 usage, 1 other error.
"""
from __future__ import annotations

import asyncio
import os
import random
import sys
import time

import sqlock


def critical_section(log: str, token: int) -> None:
    """Proves exclusion (the marker) and logs the grant; exits 3 on an overlap."""
    marker = log + ".inside"
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        print(f"OVERLAP: {marker} exists", file=sys.stderr)
        sys.exit(3)
    with open(log, "a", encoding="ascii") as out:
        out.write(f"{token} {os.getpid()}\n")
    time.sleep(random.uniform(0.0002, 0.001))
    os.unlink(marker)


def run_sync(m: sqlock.Mutex, iterations: int, log: str) -> None:
    for _ in range(iterations):
        with m:
            critical_section(log, m.token)


async def run_async(m: sqlock.Mutex, iterations: int, log: str) -> None:
    for _ in range(iterations):
        async with m:
            critical_section(log, m.token)


def main(argv: list) -> int:
    if len(argv) != 8 or argv[1] not in ("sync", "async"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, url, name, ttl_ms, iterations, log, strategy = argv[1:]
    db = sqlock.connect(url)
    m = sqlock.Mutex(db, name, ttl=int(ttl_ms) / 1000.0, strategy=strategy)
    try:
        if mode == "sync":
            run_sync(m, int(iterations), log)
        else:
            asyncio.run(run_async(m, int(iterations), log))
    except sqlock.LockLost as e:
        print(f"release failed: {e}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
