#!/usr/bin/env python3
"""asyncio_bench.py: the Python package's asyncio targets (issue 36), measured.

1. handoff: a released lock wakes a waiting asyncio task within 2x the time it takes to wake
   a C++ waiter on the same backend. One holder (this process, a synchronous sqlock.Mutex)
   and two waiter processes on one name: the C++ one (sqlock_handoff_waiter,
   sqlock::mutex::lock()) and an asyncio one (this script with --waiter: ``await
   lock.acquire_async()``). Rounds alternate between them, so both share the machine's noise:
   the holder takes the lock, tells the round's waiter to wait, holds for --hold-ms (the waiter
   is in line by then), notes the time and releases; the waiter notes when its wait returned.
   handoff = t_granted - t_release_start, both on CLOCK_MONOTONIC (one clock for every process
   of the host), as sqlock_handoff_bench defines it. Ratio: asyncio / C++ of the medians.
2. lag: 100 asyncio tasks waiting on 10 names (10 tasks per name, each with a Mutex of its
   own, holding --lag-hold-ms in turn) while a ticker task sleeps 1 ms at a time and records how
   late it wakes: the event loop's stalls. Target: none over 5 ms while the tasks wait. The
   first --warmup-seconds (0.5) are the start, reported in a column of their own: the tasks
   make their lock objects and start their first acquires, and the library opens its
   connections and starts its threads. The same ticker runs alone first (the machine's own
   noise, for comparison).

    asyncio_bench.py --url URL [--url URL ...] --waiter-bin PATH [--strategy S] [--rounds R]
                     [--hold-ms H] [--lag-seconds S] [--tasks N] [--names K] [--lag-hold-ms H]
                     [--warmup-seconds W] [--json FILE] [--markdown FILE]

Run with PYTHONPATH naming the built package (BUILD/python). Exit status: 0 ok (targets are
reported, not enforced: this machine's noise, see tools/bench/README.md); 1 a part failed (a
waiter, or lag tasks still waiting DRAIN_SECONDS after their run: reported in its table);
2 usage.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

import sqlock

HANDOFF_TARGET = 2.0  # asyncio / C++ median handoff
LAG_TARGET_MS = 5.0  # longest event-loop stall
DRAIN_SECONDS = 30.0  # after a lag run, how long its tasks may take to get their last grant


# ------------------------------------------------------------------ the asyncio waiter


def waiter_main(url: str, name: str, strategy: str) -> int:
    """The asyncio waiter process: the protocol of sqlock_handoff_waiter, from a task."""
    async def main() -> None:
        db = await sqlock.connect_async(url)
        lock = sqlock.Mutex(db, name, strategy=strategy)
        loop = asyncio.get_running_loop()
        while True:
            command = await loop.run_in_executor(None, sys.stdin.readline)
            if command.strip() != "go":
                return
            print("waiting", flush=True)
            await lock.acquire_async()
            granted = time.monotonic_ns()
            token = lock.token
            await lock.release_async()
            print(f"granted {granted} {token}\nreleased", flush=True)

    asyncio.run(main())
    return 0


# ------------------------------------------------------------------ handoff


class Waiter:
    """A waiter process spoken to over its stdin/stdout."""

    def __init__(self, kind: str, argv: List[str]) -> None:
        self.kind = kind
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def expect(self, word: str) -> List[str]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        fields = line.split()
        if not fields or fields[0] != word:
            raise RuntimeError(f"{self.kind} waiter: expected {word!r}, got {line!r} "
                               f"(exit {self.proc.poll()})")
        return fields

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            self.send("quit")
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def handoff(url: str, strategy: str, waiter_bin: str, rounds: int,
            hold_ms: float) -> Dict[str, Any]:
    """One database: interleaved rounds of the C++ and the asyncio waiter."""
    name = f"bench:asyncio-handoff:{uuid.uuid4().hex[:8]}"
    db = sqlock.connect(url)
    db.migrate()
    holder = sqlock.Mutex(db, name, strategy=strategy)
    waiters = {
        "cpp": Waiter("cpp", [waiter_bin, url, name, strategy]),
        "asyncio": Waiter("asyncio", [sys.executable, os.path.abspath(__file__), "--waiter",
                                      url, name, strategy]),
    }
    samples: Dict[str, List[float]] = {"cpp": [], "asyncio": []}
    last_token = 0
    try:
        # Round 0 of each kind warms up (connections, the worker thread) and is not counted.
        for i in range(2 * (rounds + 1)):
            kind = ("cpp", "asyncio")[(i + i // 2) % 2]  # cpp, asyncio, asyncio, cpp, ...
            w = waiters[kind]
            holder.acquire()
            w.send("go")
            w.expect("waiting")
            time.sleep(hold_ms / 1000.0)  # the workload: held while the waiter is in line
            released = time.monotonic_ns()
            holder.release()
            fields = w.expect("granted")
            w.expect("released")
            granted, token = int(fields[1]), int(fields[2])
            if strategy != "select_for_update":
                if token <= last_token:
                    raise RuntimeError(f"tokens out of order: {token} after {last_token}")
                last_token = token
            if i >= 2:
                samples[kind].append((granted - released) / 1e6)
    finally:
        for w in waiters.values():
            w.close()
        holder.close()
        db.close()
    med = {k: statistics.median(v) for k, v in samples.items()}
    ratio = med["asyncio"] / med["cpp"] if med["cpp"] > 0 else float("inf")
    return {
        "backend": url.split(":", 1)[0], "strategy": strategy, "rounds": rounds,
        "hold_ms": hold_ms,
        "cpp_ms": {"median": med["cpp"], "p90": percentile(samples["cpp"], 90),
                   "max": max(samples["cpp"])},
        "asyncio_ms": {"median": med["asyncio"], "p90": percentile(samples["asyncio"], 90),
                       "max": max(samples["asyncio"])},
        "ratio": ratio, "target": HANDOFF_TARGET, "met": ratio <= HANDOFF_TARGET,
    }


# ------------------------------------------------------------------ event-loop lag


async def ticker(stop: asyncio.Event, lags: List[float]) -> None:
    """Sleeps 1 ms at a time; records how much later than asked each wake-up came (ms)."""
    while not stop.is_set():
        asked = time.monotonic()
        await asyncio.sleep(0.001)
        lags.append((time.monotonic() - asked - 0.001) * 1000.0)


async def lag_run(url: str, strategy: str, seconds: float, tasks: int, names: int,
                  hold_ms: float, warmup: float) -> Dict[str, Any]:
    db = await sqlock.connect_async(url)
    await asyncio.to_thread(db.migrate)
    base = f"bench:asyncio-lag:{uuid.uuid4().hex[:8]}"

    async def measure(with_tasks: bool) -> Tuple[List[float], List[float], int]:
        """(the start's lags, the lags while the tasks wait, grants)"""
        stop = asyncio.Event()
        lags: List[float] = []
        grants = 0

        async def contender(i: int) -> None:
            nonlocal grants
            lock = sqlock.Mutex(db, f"{base}:{i % names}", strategy=strategy)
            while not stop.is_set():
                async with lock:
                    grants += 1
                    await asyncio.sleep(hold_ms / 1000.0)

        workers = [asyncio.create_task(contender(i)) for i in range(tasks if with_tasks else 0)]
        tick = asyncio.create_task(ticker(stop, lags))
        # The start: every task makes its lock object and starts its first acquire, and the
        # library opens a connection per name (PostgreSQL's SCRAM-SHA-256 costs the client a
        # few ms of CPU each) and starts its threads. Reported apart from the waiting.
        await asyncio.sleep(warmup)
        startup = lags[:]
        lags.clear()
        await asyncio.sleep(seconds)
        stop.set()
        await tick
        # Each task ends after its next grant: a name that stops granting shows here as a
        # failure, not as a hung benchmark (cancelling a wait leaves nothing held).
        pending = set()
        if workers:
            _, pending = await asyncio.wait(workers, timeout=DRAIN_SECONDS)
        for w in pending:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if pending:
            raise RuntimeError(f"{len(pending)} of {tasks} tasks were still waiting "
                               f"{DRAIN_SECONDS} s after the run ({url.split(':', 1)[0]}, "
                               f"{grants} grants)")
        for w in workers:
            if w.exception() is not None:
                raise RuntimeError(f"a task failed: {w.exception()!r}")
        return startup, lags, grants

    _, alone, _ = await measure(False)
    startup, busy, grants = await measure(True)
    db.close()

    def summary(values: List[float]) -> Dict[str, Any]:
        return {"ticks": len(values), "median": statistics.median(values),
                "p99": percentile(values, 99), "max": max(values),
                "over_target": sum(1 for v in values if v > LAG_TARGET_MS)}

    result = {"backend": url.split(":", 1)[0], "strategy": strategy, "seconds": seconds,
              "tasks": tasks, "names": names, "hold_ms": hold_ms, "grants": grants,
              "alone_ms": summary(alone), "with_tasks_ms": summary(busy),
              "warmup_seconds": warmup, "startup_ms": summary(startup) if startup else None,
              "target_ms": LAG_TARGET_MS}
    result["met"] = result["with_tasks_ms"]["max"] <= LAG_TARGET_MS
    return result


# ------------------------------------------------------------------ report


def markdown(handoffs: List[Dict[str, Any]], lags: List[Dict[str, Any]]) -> str:
    out = ["## asyncio handoff: a released lock wakes a waiting task (target asyncio / C++ "
           f"<= {HANDOFF_TARGET}x)", "",
           "| backend | strategy | rounds | C++ median ms | asyncio median ms | C++ p90 | "
           "asyncio p90 | ratio | met |", "|---|---|---|---|---|---|---|---|---|"]
    for h in handoffs:
        if "error" in h:
            out.append(f"| {h['backend']} | {h['strategy']} | FAILED: {h['error']} |||||||")
            continue
        out.append(f"| {h['backend']} | {h['strategy']} | {h['rounds']} | "
                   f"{h['cpp_ms']['median']:.3f} | {h['asyncio_ms']['median']:.3f} | "
                   f"{h['cpp_ms']['p90']:.3f} | {h['asyncio_ms']['p90']:.3f} | "
                   f"{h['ratio']:.2f}x | {'yes' if h['met'] else 'NO'} |")
    out += ["", f"## Event-loop lag: {lags[0]['tasks'] if lags else 0} tasks waiting on "
            f"{lags[0]['names'] if lags else 0} names (target: no stall over {LAG_TARGET_MS} ms)",
            "", "Measured while the tasks wait, after the start (its longest stall in its own column: "
            "lock objects made, connections opened, threads started).", "",
            "| backend | strategy | hold ms | grants | ticks | alone max ms | with tasks: median | "
            "p99 | max ms | ticks over target | met | start: max ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for lag in lags:
        if "error" in lag:
            out.append(f"| {lag['backend']} | {lag['strategy']} | {lag['hold_ms']:g} | "
                       f"FAILED: {lag['error']} |||||||")
            continue
        a, b = lag["alone_ms"], lag["with_tasks_ms"]
        out.append(f"| {lag['backend']} | {lag['strategy']} | {lag['hold_ms']:g} | {lag['grants']} | "
                   f"{b['ticks']} | "
                   f"{a['max']:.2f} | {b['median']:.3f} | {b['p99']:.2f} | {b['max']:.2f} | "
                   f"{b['over_target']} | {'yes' if lag['met'] else 'NO'} | "
                   f"{lag['startup_ms']['max'] if lag['startup_ms'] else 0:.2f} |")
    return "\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--waiter":
        return waiter_main(*sys.argv[2:])
    p = argparse.ArgumentParser(description="the Python package's asyncio targets, measured")
    p.add_argument("--url", action="append", required=True)
    p.add_argument("--waiter-bin", required=True, help="path of sqlock_handoff_waiter")
    p.add_argument("--strategy", default="unique_key")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--hold-ms", type=float, default=30.0)
    p.add_argument("--lag-seconds", type=float, default=3.0)
    p.add_argument("--tasks", type=int, default=100)
    p.add_argument("--names", type=int, default=10)
    p.add_argument("--lag-hold-ms", type=float, default=20.0)
    p.add_argument("--warmup-seconds", type=float, default=0.5,
                   help="the start of a lag run, reported apart (default 0.5)")
    p.add_argument("--json")
    p.add_argument("--markdown")
    args = p.parse_args()
    if args.rounds < 1 or args.tasks < 1 or args.names < 1 or args.lag_seconds <= 0:
        p.error("--rounds, --tasks, --names and --lag-seconds must be positive")
    if args.warmup_seconds < 0:
        p.error("--warmup-seconds must not be negative")
    handoffs: List[Dict[str, Any]] = []
    lags: List[Dict[str, Any]] = []
    failed = False
    for url in args.url:
        backend = url.split(":", 1)[0]
        # A part that fails is reported in its table and fails the run; the others still run.
        try:
            handoffs.append(handoff(url, args.strategy, args.waiter_bin, args.rounds,
                                    args.hold_ms))
        except (RuntimeError, sqlock.Error) as e:
            print(f"asyncio_bench: handoff, {backend}: {e}", file=sys.stderr)
            handoffs.append({"backend": backend, "strategy": args.strategy, "error": str(e)})
            failed = True
        try:
            lags.append(asyncio.run(lag_run(url, args.strategy, args.lag_seconds, args.tasks,
                                            args.names, args.lag_hold_ms,
                                            args.warmup_seconds)))
        except (RuntimeError, sqlock.Error) as e:
            print(f"asyncio_bench: lag, {backend}: {e}", file=sys.stderr)
            lags.append({"backend": backend, "strategy": args.strategy, "tasks": args.tasks,
                         "names": args.names, "hold_ms": args.lag_hold_ms, "error": str(e)})
            failed = True
    text = markdown(handoffs, lags)
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"handoff": handoffs, "lag": lags}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
