"""fork(): a child never releases or renews its parent's lock. Objects it inherits are inert
(their use raises InheritedHandle; collecting them closes nothing)."""
from __future__ import annotations

import os
import subprocess
import sys

FORKER = r"""
import gc, os, sys, time, sqlock
url, name = sys.argv[1], sys.argv[2]
db = sqlock.connect(url)
m = sqlock.Mutex(db, name, ttl=1.0, renew=True)
m.acquire()
token = m.token
pid = os.fork()
if pid == 0:  # the child: every use of what it inherited is refused
    refused = 0
    for use in (m.release, m.owns_lock, lambda: m.token, lambda: db.backend,
                lambda: sqlock.Mutex(db, name + ":child")):
        try:
            use()
        except sqlock.InheritedHandle:
            refused += 1
    del m, db
    gc.collect()  # collecting them closes (releases) nothing
    # No new connection here: the parent's threads (renewal, drivers) may have held locks at
    # the fork, so the child of a process using sqlock must not use it (it may exec).
    print("child", refused, flush=True)
    sys.exit(0)  # a normal exit: the interpreter finalizes everything
_, status = os.waitpid(pid, 0)
time.sleep(2.5)  # over two TTLs: the parent's renewals must go on
probe = sqlock.Mutex(db, name)
print("parent", os.waitstatus_to_exitcode(status), m.owns_lock(), m.token == token, m.lost,
      probe.acquire(blocking=False), flush=True)
m.release()  # no LockLost: nobody touched the grant
print("released", flush=True)
"""


def test_a_child_never_releases_or_renews_its_parents_lock(url, name):
    done = subprocess.run([sys.executable, "-c", FORKER, url, name], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "child 5",
        "parent 0 True True False False",
        "released",
    ], done.stderr
