#!/usr/bin/env bash
# The documentation site (issue 33): `mkdocs build --strict` of mkdocs.yml (pages in docs/site/)
# must pass, and tests/docs/check_site.py must find every page in the nav, every nav entry a
# page, and every link and #anchor of the built site and of README.md resolving. mkdocs
# 1.4.2 only logs a page missing from the nav (INFO) and does not check anchors, hence the
# second step. mkdocs missing is a failure, not a skip: tools/test-all.sh installs it.
#   check_site.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$(realpath "$1") scratch=$2
if ! command -v mkdocs >/dev/null; then
    echo "FAIL: mkdocs is not installed (Debian packages mkdocs and mkdocs-material;" \
        "tools/test-all.sh installs them)" >&2
    exit 1
fi
rm -rf "$scratch"
mkdir -p "$scratch"
log=$scratch/mkdocs.log
status=0
mkdocs build --strict -f "$src/mkdocs.yml" -d "$scratch/site" >"$log" 2>&1 || status=$?
# Python's DeprecationWarnings from jinja2 (Debian 12) are noise; everything else is shown.
grep -vE 'DeprecationWarning|jinja2|self\.current|\.decode\(|^  File |^$' "$log" || true
echo
if ((status)); then
    echo "FAIL: mkdocs build --strict exited $status" >&2
    exit 1
fi
python3 "$src/tests/docs/check_site.py" "$src" "$scratch/site" "$log"
