"""Ctrl-C: a wait on the main thread ends with KeyboardInterrupt, holding nothing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import sqlock

WAITER = r"""
import sys, sqlock
db = sqlock.connect(sys.argv[1])
m = sqlock.Mutex(db, sys.argv[2])
print("waiting", flush=True)
try:
    m.acquire()
    print("granted?!", flush=True)
except KeyboardInterrupt:
    print("interrupted", m.owns_lock(), m.hold_count, flush=True)
sys.stdin.read()  # stay alive (and connected) until the test has looked
"""


def test_ctrl_c_interrupts_a_wait_and_nothing_is_held(db, url, name):
    holder = sqlock.Mutex(db, name)
    holder.acquire()
    child = subprocess.Popen([sys.executable, "-c", WAITER, url, name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.5)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().strip()
        assert line == "interrupted False 0"
        assert time.monotonic() - sent < 2.0  # within a slice (200 ms) and a statement
        holder.release()
        probe = sqlock.Mutex(db, name)
        assert probe.acquire(timeout=5)  # the interrupted waiter, still alive, holds nothing
        probe.release()
    finally:
        child.communicate("", timeout=30)
    assert child.returncode == 0
