#!/usr/bin/env python3
"""The architecture checker's own test: a small tree with one of each thing it must catch (an
include running up a layer, a circle, a backend switch outside src/backends, a long function,
positional row access, a strategy including the whole database handle), beside clean code that must pass. Exit 0 when each is caught and
nothing else is reported."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "architecture", "check.py")

LONG_BODY = "".join(f"    total += {i};\n" for i in range(85))

TREE = {
    # base includes a strategy: runs up two layers
    "src/base/catalog.hpp": '#pragma once\n#include "strategies/lease.hpp"\nint catalog();\n',
    "src/base/catalog.cpp": '#include "base/catalog.hpp"\nint catalog() { return 1; }\n',
    # two units of one layer that include each other
    "src/database/pool.hpp": '#pragma once\n#include "database/gate.hpp"\nstruct pool {};\n',
    "src/database/gate.hpp": '#pragma once\n#include "database/pool.hpp"\nstruct gate {};\n',
    # a backend switch, a long function and a row read by position, in a strategy
    "src/strategies/lease.hpp": "#pragma once\nint lease(int kind);\n",
    # a strategy that reaches past its narrow context
    "src/database/database_impl.hpp": "#pragma once\nstruct database_impl {};\n",
    "src/strategies/renew.cpp": '#include "database/database_impl.hpp"\nint renew() { return 0; }\n',
    "src/strategies/lease.cpp": (
        '#include "strategies/lease.hpp"\n'
        "// Comments may say PostgreSQL or SQLite: only code is checked.\n"
        "int lease(int kind) {\n"
        "    switch (kind) {\n"
        "    case static_cast<int>(backend_kind::sqlite):\n"
        "        return 1;\n"
        "    }\n"
        "    return 0;\n"
        "}\n"
        "int renew_all(const result& r) {\n"
        "    int total = 0;\n" + LONG_BODY + "    return total + column_int(r.rows.front().at(2));\n}\n"
    ),
    # clean: a backend may name itself; a short function; a lock includes what is below it
    "src/backends/sqlite/session.cpp": '#include "base/catalog.hpp"\nconst char* name() { return "sqlite"; }\n',
    "src/locks/mutex.cpp": (
        '#include "database/pool.hpp"\n#include "strategies/lease.hpp"\n'
        "struct holder {\n    holder(int a) : m_a{a}, m_b(a) {\n        if (a) {\n            m_a = 2;\n"
        "        }\n    }\n    int m_a;\n    int m_b;\n};\n"
        "int unlock(int x) {\n    auto f = [&] { return x; };\n    return f();\n}\n"
    ),
}

EXPECTED = {
    ("layer", "src/base/catalog.hpp"),
    ("circle", "src/database/gate.hpp"),
    ("backend", "src/strategies/lease.cpp"),
    ("long", "src/strategies/lease.cpp"),
    ("rows", "src/strategies/lease.cpp"),
    ("sealed", "src/strategies/renew.cpp"),
}


def main():
    with tempfile.TemporaryDirectory() as root:
        for path, text in TREE.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        run = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    found = set()
    for line in run.stdout.splitlines():
        path, _, rest = line.partition(":")
        rule = rest.split(": ", 2)[1] if rest.count(": ") >= 1 else "?"
        found.add((rule, path))
    print(run.stdout, end="")
    missed = EXPECTED - found
    extra = found - EXPECTED
    for rule, path in sorted(missed):
        print(f"MISSED: the checker did not report {rule} in {path}")
    for rule, path in sorted(extra):
        print(f"UNEXPECTED: the checker reported {rule} in {path}")
    if run.returncode != 1:
        print(f"the checker exited {run.returncode}, not 1, with findings to report")
    ok = not missed and not extra and run.returncode == 1
    print("architecture checker self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
