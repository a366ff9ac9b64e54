#!/usr/bin/env python3
"""py_worker.py: a torture-run contender written in Python (the package sqlock), the same
protocol as sqlock_torture_worker's lock mode (worker.cpp; tools/torture/README.md), so that
Python holders are checked by the same rules as C++ ones in one run: no silent overlap,
tokens strictly increasing in grant order, no refused fenced write its holder was not told of.

    py_worker.py run --url URL --name NAME --strategy S --ttl-ms T --dir DIR --slot K
        [--hold-min-pct 1] [--hold-max-pct 80] [--renew on|off|mix] [--seed N] [--poll-ms 5]
        [--wait-factor 10] [--control none] [--mode lock] [--self-stop-prob P]
        [--self-stop-once FILE] [--permits N] [--writer-share PCT]

Lock mode and control "none" only (run.sh uses it for --python-workers; the negative controls
and the other modes keep the C++ worker). The loop runs on a thread of its own, as in a
threaded server: acquire() waits there in one call, in the server's line (on the main thread it
would wait in 200 ms slices, so that Ctrl-C works, and lose its place in line at each: such
workers were seen to starve beside C++ ones). Differences from the C++ worker, none of which
weakens a rule: the session id in the grant line is 0 (the package does not expose it, so the
session-kill nemesis must not be combined with Python workers on select_for_update); on_lost is
recorded as lost_cb when the worker drains the lock's events (after the callback ran, which
the rules allow: lost_cb only counts as having been told); last_loss is "lost" when release()
raised LockLost (the C++ unlock() reports it through last_loss()).
"""
from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

import sqlock

STOP_REQUESTED = False


def on_usr1(signum: int, frame: object) -> None:
    """SIGUSR1: raise SIGSTOP inside the next write window (as the C++ worker)."""
    global STOP_REQUESTED
    STOP_REQUESTED = True


class History:
    """One line per event, T_NS PID KIND TOKEN [ARG...], each a single write() (O_APPEND)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self.pid = os.getpid()

    def rec(self, kind: str, token: int, args: Tuple[str, ...] = (),
            t: Optional[int] = None) -> None:
        fields = [str(t or time.monotonic_ns()), str(self.pid), kind, str(token)]
        fields += [a.replace(" ", "_").replace("\n", "_") or "-" for a in args]
        try:
            os.write(self.fd, (" ".join(fields) + "\n").encode())
        except OSError as e:
            print(f"py_worker: history write failed: {e}", file=sys.stderr)


def read_number(path: str) -> int:
    try:
        with open(path, "rb") as f:
            text = f.read(31).strip()
        return int(text) if text else 0
    except FileNotFoundError:
        return 0


def write_number(path: str, value: int) -> None:
    """Fixed width, in place (as the C++ worker: a shorter value leaves no tail behind)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.pwrite(fd, b"%020d\n" % value, 0)
    finally:
        os.close(fd)


def append_line(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def fenced_write(directory: str, token: int) -> Tuple[bool, int]:
    """The fenced resource, shared with the C++ workers: under flock(fence.lock), refuses a
    token not above fence.max, else writes the new maximum, then logs the write."""
    import fcntl
    fd = os.open(os.path.join(directory, "fence.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        highest = read_number(os.path.join(directory, "fence.max"))
        if token <= highest:
            return False, highest
        write_number(os.path.join(directory, "fence.max"), token)
        append_line(os.path.join(directory, "fence.log"),
                    f"{time.monotonic_ns()} {os.getpid()} {token}\n")
        return True, highest
    finally:
        os.close(fd)


def claim_once(path: str) -> bool:
    if not path:
        return False
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        return True
    except FileExistsError:
        return False


def drain_losses(lock: sqlock.Mutex, history: History) -> List[sqlock.LostEvent]:
    """Records the lost events the lock queued since the last call (lost_cb)."""
    lost = [e for e in lock.events() if isinstance(e, sqlock.LostEvent)]
    for e in lost:
        history.rec("lost_cb", e.token, (e.reason.name.lower(),))
    return lost


def run(o: Dict[str, str]) -> int:
    if o.get("--mode", "lock") != "lock" or o.get("--control", "none") != "none":
        print("py_worker: lock mode and control none only", file=sys.stderr)
        return 2
    directory, ttl_ms = o["--dir"], int(o["--ttl-ms"])
    slot = int(o["--slot"])
    hold_min, hold_max = int(o.get("--hold-min-pct", "1")), int(o.get("--hold-max-pct", "80"))
    renew_mode, poll_ms = o.get("--renew", "mix"), int(o.get("--poll-ms", "5"))
    wait_ms = ttl_ms * int(o.get("--wait-factor", "10"))
    self_stop_prob = float(o.get("--self-stop-prob", "0"))
    self_stop_once = o.get("--self-stop-once", "")
    history = History(os.path.join(directory, f"h-{slot:02d}.log"))
    marker = os.path.join(directory, f"hold-{slot:02d}")
    stop_file = os.path.join(directory, "stop")
    rng = random.Random(int(o.get("--seed", "0")) ^ (os.getpid() << 20))
    history.rec("start", 0, (str(slot), "none"))

    # Connect with retries: a respawned worker may start while the server restarts.
    db: Optional[sqlock.Database] = None
    while db is None:
        try:
            db = sqlock.connect(o["--url"])
        except sqlock.Error as e:
            history.rec("error", 0, (f"connect:{e}",))
            if os.path.exists(stop_file):
                return 0
            time.sleep(0.1)  # retry backoff
    locks = {renew: sqlock.Mutex(db, o["--name"], strategy=o["--strategy"], ttl=ttl_ms / 1000,
                                 renew=renew) for renew in (False, True)}

    while not os.path.exists(stop_file):
        renew = renew_mode == "on" or (renew_mode == "mix" and rng.randint(0, 1) == 1)
        lock = locks[renew]
        hold_ms = rng.randint(ttl_ms * hold_min, max(ttl_ms * hold_min, ttl_ms * hold_max)) // 100
        if not renew:  # without renewal a hold past the lease would be lost
            hold_ms = min(hold_ms, ttl_ms * 8 // 10)
        history.rec("acquire", 0)
        try:
            if not lock.acquire(timeout=wait_ms / 1000):
                history.rec("timeout", 0)
                continue
            token = lock.token
        except sqlock.Error as e:
            history.rec("error", 0, (f"lock:{e}",))
            time.sleep(0.02)  # retry backoff
            continue
        history.rec("grant", token, ("1" if renew else "0", "0"))
        told = False
        try:
            try:
                os.unlink(marker)
            except FileNotFoundError:
                pass
            append_line(marker, f"{os.getpid()} {token} 0\n")
            value = read_number(os.path.join(directory, "counter"))
            history.rec("read", token, (str(value),))
            # Hold, watching the lease; the clock is read BEFORE owns_lock().
            hold_end = time.monotonic() + hold_ms / 1000
            while True:
                t = time.monotonic_ns()
                if not lock.owns_lock():
                    history.rec("told", token, (), t)
                    told = True
                    break
                history.rec("own", token, (), t)
                if time.monotonic() >= hold_end:
                    break  # this observation was the final check
                time.sleep(poll_ms / 1000)
            if not told:
                # The write window: no owns_lock() check from here on; fencing protects it.
                time.sleep(rng.randint(0, 2000) / 1e6)
                global STOP_REQUESTED
                if STOP_REQUESTED or rng.random() < self_stop_prob or claim_once(self_stop_once):
                    STOP_REQUESTED = False
                    history.rec("selfstop", token)
                    # To this thread (as raise() in C): a process-directed SIGSTOP may let the
                    # calling thread run on for a moment, past "resumed".
                    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
                    history.rec("resumed", token)
                accepted, highest = fenced_write(directory, token)
                history.rec("fence", token, ("accepted" if accepted else "refused", str(highest)))
                if accepted:
                    history.rec("cw", token, (str(value + 1),))
                    write_number(os.path.join(directory, "counter"), value + 1)
                    history.rec("incr", token, (str(value + 1),))
        except (OSError, sqlock.Error) as e:
            history.rec("error", token, (f"hold:{e}",))
        try:
            os.unlink(marker)
        except FileNotFoundError:
            pass
        last_loss, failed, message = "none", "0", ""
        try:
            lock.release()
        except sqlock.LockLost:
            last_loss = "lost"
        except sqlock.Error as e:
            failed, message = "1", str(e)
        for event in drain_losses(lock, history):
            if event.token == token and last_loss == "none":
                last_loss = event.reason.name.lower()
        history.rec("release", token, (last_loss, failed))
        if failed == "1":
            history.rec("error", token, (f"unlock:{message}",))
    for lock in locks.values():
        lock.close()
    db.close()
    return 0


def main(argv: List[str]) -> int:
    if len(argv) < 2 or argv[1] != "run" or len(argv) % 2 != 0:
        print(__doc__, file=sys.stderr)
        return 2
    options = dict(zip(argv[2::2], argv[3::2]))
    signal.signal(signal.SIGUSR1, on_usr1)  # handlers are set, and run, on the main thread
    status: List[int] = []
    worker = threading.Thread(target=lambda: status.append(run(options)), name="py_worker")
    worker.start()
    while worker.is_alive():
        worker.join(0.05)  # the main thread stays free to run the SIGUSR1 handler
    return status[0] if status else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
