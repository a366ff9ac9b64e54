#!/usr/bin/env python3
"""One fleet run for tools/bench/run_fleet.sh, and the report over all runs.

  fleet.py run --sqlock BIN --url URL --backend B --mode one|distinct --processes P
               --strategy S --wait 10m --timeout SECONDS --job JOB --dir DIR --results FILE
               [--sampler postgresql|mysql --admin ARGS...]
  fleet.py report --results FILE --markdown FILE --json FILE [--meta FILE]

run: forks P children that block on one pipe until the parent closes its end (a start barrier:
all are released at once, none is staggered by the fork loop), then each execs
  sqlock --url URL run NAME --ttl 30s --wait W [--strategy S] -- JOB
Meanwhile one persistent admin client samples the server's client connections every 50 ms.
Appends one JSON object per run to FILE. A run that passes --timeout is ended: its remaining
processes are SIGKILLed (with their process groups) and counted as failures ("killed").
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

SAMPLE_SECONDS = 0.05


def now_us():
    return time.time_ns() // 1000


class Sampler(threading.Thread):
    """Peak client connections, from one connection opened before the fleet starts (so a full
    server cannot refuse it), minus that connection itself."""

    QUERIES = {
        # Every client backend except this sampler's own.
        "postgresql": "SELECT count(*) FILTER (WHERE pid <> pg_backend_pid()) FROM pg_stat_activity"
                      " WHERE backend_type = 'client backend';\n",
        "mysql": "SHOW GLOBAL STATUS LIKE 'Threads_connected';\n",
    }

    def __init__(self, kind, admin):
        super().__init__(daemon=True)
        self.kind = kind
        self.proc = subprocess.Popen(admin, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.stop = threading.Event()
        self.series = []  # (µs, connections)
        self.errors = 0
        self.baseline = self.sample()  # before the fleet: the sampler alone (and leftovers)

    def sample(self):
        self.proc.stdin.write(self.QUERIES[self.kind])
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("admin client closed its output")
        value = int(line.split()[-1])
        # Threads_connected counts this client's own connection too.
        return value - 1 if self.kind == "mysql" else value

    def run(self):
        while not self.stop.is_set():
            try:
                self.series.append((now_us(), self.sample()))
            except (OSError, ValueError, RuntimeError):
                self.errors += 1
                if self.proc.poll() is not None:
                    return
            self.stop.wait(SAMPLE_SECONDS)

    def finish(self):
        self.stop.set()
        self.join(5)
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def listen_overflows():
    """The host's count of connections dropped because a listen queue was full (TcpExt
    ListenOverflows): the client retries its SYN after 1 s, 3 s... (the whole host counts,
    so other work on it adds to the difference)."""
    try:
        with open("/proc/net/netstat") as f:
            lines = [line.split() for line in f if line.startswith("TcpExt:")]
        return int(lines[1][lines[0].index("ListenOverflows")])
    except (OSError, ValueError, IndexError):
        return None


def percentile(sorted_values, q):
    """Nearest rank, as the C++ benchmarks report it."""
    if not sorted_values:
        return None
    rank = max(1, int(-(-q * len(sorted_values) // 1)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def run(args):
    os.makedirs(args.dir, exist_ok=True)
    errdir = os.path.join(args.dir, "stderr")
    os.makedirs(errdir, exist_ok=True)
    log = os.path.join(args.dir, "grants.log")
    open(log, "w").close()
    tag = f"fleet:{args.backend}:{args.strategy}:{args.mode}:{args.processes}:{os.getpid()}"
    names = [tag if args.mode == "one" else f"{tag}:{i}" for i in range(args.processes)]

    # Connected now; its thread starts after the forks (a forked child gets no thread).
    sampler = Sampler(args.sampler, args.admin) if args.sampler else None

    env = dict(os.environ, FLEET_DIR=args.dir, LC_ALL="C")
    r, w = os.pipe()  # both ends close on exec (Python's default)
    pids = {}
    t_fork = time.monotonic()
    for i in range(args.processes):
        cmd = [args.sqlock, "--url", args.url, *args.sqlock_args.split(), "run", names[i],
               "--ttl", "30s", "--wait", args.wait]
        if args.strategy != "unique_key":
            cmd += ["--strategy", args.strategy]
        cmd += ["--", args.job]
        pid = os.fork()
        if pid == 0:  # child: wait at the barrier, then become sqlock
            try:
                os.close(w)
                os.setpgid(0, 0)  # so a straggler can be killed with its job
                os.read(r, 1)  # EOF once every copy of w is closed
                env["FLEET_T0"] = str(now_us())
                fd = os.open(os.path.join(errdir, str(i)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 2)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.execve(args.sqlock, cmd, env)
            finally:
                os._exit(127)
        pids[pid] = i
    fork_seconds = time.monotonic() - t_fork
    if sampler:
        sampler.start()
    overflows_before = listen_overflows()
    t_release = now_us()
    t0 = time.monotonic()
    os.close(w)  # the barrier opens
    os.close(r)

    status = {}
    end_us = {}
    killed = 0
    deadline = t0 + args.timeout
    while len(status) < len(pids):
        if time.monotonic() > deadline:
            for pid in pids:
                if pid not in status:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for pid in pids:
                if pid not in status:
                    os.waitpid(pid, 0)
                    status[pid] = "killed"
                    end_us[pid] = now_us()
                    killed += 1
            break
        pid, st = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.005)
            continue
        if pid not in pids:  # the admin client, if it died
            continue
        status[pid] = os.waitstatus_to_exitcode(st)
        end_us[pid] = now_us()
    wall = time.monotonic() - t0
    overflows_after = listen_overflows()
    if sampler:
        sampler.finish()

    # ---------------------------------------------------------------- analysis
    codes = {}
    for code in status.values():
        codes[str(code)] = codes.get(str(code), 0) + 1
    grants = codes.get("0", 0)
    failures = args.processes - grants
    # What the processes said: the first message per failing exit code, and how many that
    # exited 0 still warned (e.g. a release that failed: the lease then waits for its TTL).
    first_errors = {}
    warned = 0
    first_warning = None
    with open(os.path.join(args.dir, "outcomes.tsv"), "w") as out:
        for pid, code in status.items():
            try:
                with open(os.path.join(errdir, str(pids[pid])), errors="replace") as f:
                    said = f.read().strip()
            except OSError:
                said = ""
            out.write(f"{pids[pid]}\t{pid}\t{code}\t{(end_us[pid] - t_release) / 1e6:.3f}\t"
                      f"{said.splitlines()[0] if said else ''}\n")
            if code != 0 and str(code) not in first_errors:
                first_errors[str(code)] = said[:400]
            if code == 0 and said:
                warned += 1
                first_warning = first_warning or said[:400]

    jobs = []
    with open(log) as f:
        for line in f:
            p = line.split()
            if len(p) != 7:
                continue
            jobs.append({"t0": int(p[0]), "start": int(p[1]), "end": int(p[2]), "pid": int(p[3]),
                         "token": None if p[4] == "-" else int(p[4]), "name": p[5],
                         "exclusive": p[6] == "1"})
    marker_violations = sum(1 for j in jobs if not j["exclusive"])
    overlaps = 0
    token_violations = 0
    by_name = {}
    for j in jobs:
        by_name.setdefault(j["name"], []).append(j)
    for js in by_name.values():
        js.sort(key=lambda j: j["start"])
        for a, b in zip(js, js[1:]):
            if b["start"] < a["end"]:
                overlaps += 1
            if a["token"] is None or b["token"] is None or b["token"] <= a["token"]:
                token_violations += 1
    waits = sorted((j["start"] - j["t0"]) / 1000.0 for j in jobs)
    samples = [c for _, c in sampler.series] if sampler else []
    peak = max(samples) if samples else None

    result = {
        "backend": args.backend, "strategy": args.strategy, "mode": args.mode,
        "processes": args.processes, "wait": args.wait, "sqlock_args": args.sqlock_args, "job_seconds": float(
            os.environ.get("FLEET_JOB_SECONDS", "0.02")),
        "grants": grants, "failures": failures, "exit_codes": codes, "killed": killed,
        "first_errors": first_errors, "warned": warned, "first_warning": first_warning,
        "jobs_logged": len(jobs),
        "marker_violations": marker_violations, "interval_overlaps": overlaps,
        "token_order_violations": token_violations,
        "wall_seconds": round(wall, 3), "fork_seconds": round(fork_seconds, 3),
        "grants_per_second": round(grants / wall, 2) if wall > 0 else None,
        "wait_p50_ms": percentile(waits, 0.5), "wait_p99_ms": percentile(waits, 0.99),
        "wait_max_ms": waits[-1] if waits else None,
        "wait_mean_ms": round(statistics.fmean(waits), 3) if waits else None,
        "peak_connections": peak,
        "peak_per_process": round(peak / args.processes, 3) if peak is not None else None,
        "connections_before": sampler.baseline if sampler else None,
        "listen_overflows": (overflows_after - overflows_before
                             if overflows_before is not None and overflows_after is not None
                             else None),
        "samples": len(samples), "sample_errors": sampler.errors if sampler else 0,
        "release_us": t_release,
    }
    ok = (failures == 0 and marker_violations == 0 and overlaps == 0 and token_violations == 0
          and len(jobs) == grants)
    result["pass"] = ok
    with open(args.results, "a") as f:
        f.write(json.dumps(result) + "\n")
    series_path = os.path.join(args.dir, "connections.tsv")
    with open(series_path, "w") as f:
        for t, c in (sampler.series if sampler else []):
            f.write(f"{(t - t_release) / 1e6:.3f}\t{c}\n")
    print(f"{args.backend} {args.strategy} {args.mode} P={args.processes}: grants {grants}, "
          f"failures {failures} {codes}, overlaps {marker_violations}+{overlaps}, token order "
          f"{token_violations}, wall {wall:.1f} s, peak conns {peak}, wait p50 "
          f"{result['wait_p50_ms']} p99 {result['wait_p99_ms']} ms", file=sys.stderr)
    for code, msg in first_errors.items():
        print(f"  exit {code}: {msg}", file=sys.stderr)
    return 0 if ok else 1


def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def report(args):
    rows = []
    with open(args.results) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    meta = {}
    if args.meta and os.path.exists(args.meta):
        with open(args.meta) as f:
            meta = json.load(f)
    label = {"postgresql": "PostgreSQL", "mysql": "MariaDB", "sqlite": "SQLite"}
    out = []
    out.append("| backend | strategy | names | P | grants | failures (exit codes) | overlaps | "
               "token order | exit 0 but warned | wall s | grants/s | wait p50 ms | wait p99 ms | peak conns | "
               "peak / P | listen overflows | verdict |")
    out.append("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        codes = ", ".join(f"{n}× {c}" for c, n in sorted(r["exit_codes"].items()) if c != "0")
        out.append(
            f"| {label.get(r['backend'], r['backend'])} | {r['strategy']} | {r['mode']} | "
            f"{r['processes']} | {r['grants']} | {r['failures']}{' (' + codes + ')' if codes else ''}"
            f" | {r['marker_violations'] + r['interval_overlaps']} | {r['token_order_violations']}"
            f" | {r.get('warned', '–')}"
            f" | {fmt(r['wall_seconds'], 2)} | {fmt(r['grants_per_second'])} | "
            f"{fmt(r['wait_p50_ms'], 0)} | {fmt(r['wait_p99_ms'], 0)} | "
            f"{fmt(r['peak_connections'])} | {fmt(r['peak_per_process'], 2)} | "
            f"{fmt(r.get('listen_overflows'))} | "
            f"{'PASS' if r['pass'] else '**FAIL**'} |")
    errors = [(r, c, m) for r in rows for c, m in r["first_errors"].items()]
    if errors:
        out.append("")
        out.append("First message per failing exit code:")
        out.append("")
        for r, c, m in errors:
            out.append(f"- {label.get(r['backend'])} {r['mode']} P={r['processes']}, exit {c}: "
                       f"`{m.splitlines()[0] if m else '(no output)'}`")
    warnings = [r for r in rows if r.get("first_warning")]
    if warnings:
        out.append("")
        out.append("First warning of a process that exited 0:")
        out.append("")
        for r in warnings:
            out.append(f"- {label.get(r['backend'])} {r['mode']} P={r['processes']} "
                       f"({r['warned']} processes): `{r['first_warning'].splitlines()[0]}`")
    text = "\n".join(out) + "\n"
    with open(args.markdown, "w") as f:
        f.write(text)
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "runs": rows}, f, indent=1)
        f.write("\n")
    print(text)
    return 0 if all(r["pass"] for r in rows) else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--sqlock", required=True)
    r.add_argument("--url", required=True)
    r.add_argument("--backend", required=True)
    r.add_argument("--mode", choices=["one", "distinct"], required=True)
    r.add_argument("--processes", type=int, required=True)
    r.add_argument("--strategy", default="unique_key")
    r.add_argument("--wait", default="10m")
    r.add_argument("--sqlock-args", default="", help="global sqlock options, space-separated")
    r.add_argument("--timeout", type=float, default=660)
    r.add_argument("--job", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--results", required=True)
    r.add_argument("--sampler", choices=["postgresql", "mysql"])
    r.add_argument("--admin", nargs=argparse.REMAINDER, default=[],
                   help="the admin client's command line (last option)")
    p = sub.add_parser("report")
    p.add_argument("--results", required=True)
    p.add_argument("--markdown", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--meta")
    args = ap.parse_args()
    return run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
