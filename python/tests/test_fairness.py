"""Fairness: a Python wait on the main thread (which Ctrl-C can interrupt: it waits with a
cancel token) is one wait in the lock's queues, like a C++ waiter's, so under contention it
gets its share. Two Python and two C++ processes each take the lock, hold it HOLD_MS, release
and ask again at once, for RUN_SECONDS; every process must get at least half the C++
processes' mean number of grants. A hold of 150 ms makes each wait longer than the 200 ms
slices the main thread's waits were cut into up to C API 1.1, each slice leaving the queue:
against that library this test failed (Python 7 and 8 grants to the C++ ones' 27 and 28, on
PostgreSQL and SQLite); now 16 and 16 to 17 and 17."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import helper

HOLD_MS = 150
RUN_SECONDS = 9.0

PY_HOG = r"""
import os, sys, time, sqlock
db = sqlock.connect(sys.argv[1])
m = sqlock.Mutex(db, sys.argv[2])
hold, folder = int(sys.argv[3]) / 1000.0, sys.argv[4]
grants = 0
while not os.path.exists(os.path.join(folder, "stop")):
    m.acquire()
    grants += 1
    if grants == 1:
        open(os.path.join(folder, "started"), "w").close()
    time.sleep(hold)
    m.release()
print(grants, flush=True)
"""


def test_python_main_thread_waiters_get_their_share(url, name, tmp_path):
    folders = [tmp_path / f"hog{i}" for i in range(4)]
    for f in folders:
        f.mkdir()
    py = [[sys.executable, "-c", PY_HOG, url, name, str(HOLD_MS), str(f)] for f in folders[:2]]
    cpp = [[helper("SQLOCK_CONTENDER_PATH"), "hog", url, name, "unique_key", str(HOLD_MS), str(f)]
           for f in folders[2:]]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in py + cpp]
    try:
        deadline = time.monotonic() + 60
        while not all((f / "started").exists() for f in folders):
            assert time.monotonic() < deadline, "a contender never got its first grant"
            assert all(p.poll() is None for p in procs), "a contender ended early"
            time.sleep(0.05)
        time.sleep(RUN_SECONDS)
    finally:
        for f in folders:
            (f / "stop").touch()
    counts = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        counts.append(int(out.split()[-1]))
    python, cpp_counts = counts[:2], counts[2:]
    cpp_mean = sum(cpp_counts) / len(cpp_counts)
    print(f"grants in {RUN_SECONDS} s: Python {python}, C++ {cpp_counts}")
    assert min(python) >= cpp_mean / 2, f"Python {python} against C++ {cpp_counts}"
    assert min(cpp_counts) >= sum(python) / len(python) / 2, \
        f"C++ {cpp_counts} against Python {python}"
