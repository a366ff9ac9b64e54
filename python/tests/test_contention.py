"""Callers of every language on one lock name, at once, on the backend under test and every
strategy: Python processes (synchronous and asyncio), the C++ helper
(tests/support/contender.cpp), the C helper (tests/capi/c_contender.c) and ``sqlock run``.
Each proves exclusion in its critical section (a marker created with O_EXCL) and logs its
grant's token: every grant is logged, and the tokens strictly increase."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import helper

ITERATIONS = 8
HERE = os.path.dirname(os.path.abspath(__file__))


def cli_loop(cli: str, url: str, name: str, strategy: str, log: str) -> list:
    """``sqlock run`` ITERATIONS times, its command the same critical section in the shell
    (noclobber: '>' refuses an existing marker)."""
    script = (f'for i in $(seq {ITERATIONS}); do "$0" --url "$1" run "$2" --strategy {strategy}'
              ' --ttl 30s -- sh -c \'set -C; : > "$0.inside" || exit 3; '
              'echo "$SQLOCK_TOKEN $$" >> "$0"; rm "$0.inside"\' "$3" || exit $?; done')
    return ["/bin/sh", "-c", script, cli, url, name, log]


@pytest.mark.parametrize("strategy", ["unique_key", "select_for_update", "optimistic_version"])
def test_python_cpp_c_and_cli_exclude_each_other(url, name, strategy, tmp_path):
    log = str(tmp_path / "grants.log")
    common = [url, name, "30000", str(ITERATIONS), log, strategy]
    py = [sys.executable, os.path.join(HERE, "py_contender.py")]
    commands = [
        py + ["sync"] + common,
        py + ["sync"] + common,
        py + ["async"] + common,
        [helper("SQLOCK_CONTENDER_PATH")] + common,
        [helper("SQLOCK_C_CONTENDER_PATH")] + common,
        cli_loop(helper("SQLOCK_CLI_PATH"), url, name, strategy, log),
    ]
    procs = [subprocess.Popen(c, stderr=subprocess.PIPE, text=True) for c in commands]
    failures = []
    for command, proc in zip(commands, procs):
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(f"{command[:2]} exited {proc.returncode}: {err}")
    assert not failures
    with open(log, encoding="ascii") as f:
        tokens = [int(line.split()[0]) for line in f]
    assert len(tokens) == len(commands) * ITERATIONS
    assert all(a < b for a, b in zip(tokens, tokens[1:])), f"tokens out of order in {log}"
