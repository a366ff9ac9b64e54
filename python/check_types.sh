#!/usr/bin/env bash
# The type stubs of the Python package, checked (the ctest python.types):
#   1. mypy --strict on the package as built (its modules against each other and against the
#      extension's stubs, sqlock/_sqlock.pyi), and on the test suite's use of the public API;
#   2. mypy's stubtest: the stubs against the built extension itself (every class, method and
#      function exists on both sides; parameters as the methods' text signatures give them).
# A missing mypy FAILS (Debian: apt-get install mypy; tools/test-all.sh installs it).
#
#   check_types.sh PYTHON BUILD_PYTHON_DIR SOURCE_DIR
set -euo pipefail
(($# == 3)) || { sed -n '9p' "$0" | sed 's/^# *//' >&2; exit 2; }
python=$1 built=$2 src=$3
if ! "$python" -c 'import mypy' 2>/dev/null; then
    echo "python.types: mypy is missing for $python (Debian: apt-get install mypy)" >&2
    exit 1
fi
cd "$built"
export MYPYPATH=$built PYTHONPATH=$built
# No cache: nothing written into the build or source tree, and no stale result.
common=(--cache-dir=/dev/null --no-incremental --python-executable "$python")
echo "--- mypy --strict -p sqlock"
"$python" -m mypy "${common[@]}" --strict -p sqlock
echo "--- mypy on the test suite (the public API as the tests use it)"
"$python" -m mypy "${common[@]}" --check-untyped-defs --ignore-missing-imports \
    "$src/python/tests"
echo "--- stubtest sqlock._sqlock"
"$python" -m mypy.stubtest --allowlist "$src/python/stubtest-allowlist.txt" sqlock._sqlock
