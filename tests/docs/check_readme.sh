#!/usr/bin/env bash
# The README's snippets, proven (issue 33): every fenced ```sh block of each MARKDOWN file runs
# as written, in order, and every ```cpp block is a piece of one of examples/*.cpp word for word
# (indentation aside). For README.md also: at most 250 lines, the quickstart (up to the first
# block that sets a postgresql:// SQLOCK_URL) within the first 80, and tools/test-all.sh named
# as the test command.
#
#   check_readme.sh [--require-postgresql] SQLOCK_CLI SOURCE_DIR BUILD_DIR SCRATCH_DIR [MARKDOWN...]
#
# MARKDOWN defaults to README.md (paths relative to SOURCE_DIR). How a block runs:
#   - in its own `sh -e`, in SCRATCH_DIR/work (where `examples` is the source tree's), with the
#     built sqlock first on PATH and SQLOCK_URL set to a migrated SQLite file of the scratch
#     directory (a block may export its own); blocks run in file order and share the work
#     directory, so a later block may use what an earlier one built (./basic);
#   - `pkg-config sqlock` describes the build tree (BUILD_DIR's libsqlock, the source headers);
#   - each ./NAME.sh a block names and the work directory lacks is a stub that prints its
#     $SQLOCK_TOKEN (the README's jobs are placeholders);
#   - a block with a line `export SQLOCK_URL=postgresql://…` runs against a database of its own,
#     created for it on the test server of $SQLOCK_TEST_POSTGRES_URL (tools/testdb.sh) and
#     dropped afterwards; that URL replaces the one written. Without the variable such a block
#     FAILS with --require-postgresql (what ctest passes when the backend is built), else it is
#     reported as not run;
#   - a block right after a line `<!-- not run: REASON -->` is not run (it builds for minutes,
#     installs into /usr, or is the test command itself); REASON is printed. Keep them few.
# No block may take more than 120 s.
set -euo pipefail
require_pg=0
if [[ ${1:-} == --require-postgresql ]]; then
    require_pg=1
    shift
fi
(($# >= 4)) || { sed -n '8p' "$0" | sed 's/^# *//' >&2; exit 2; }
cli=$(realpath "$1") src=$(realpath "$2") build=$(realpath "$3") scratch=$4
shift 4
files=("$@")
((${#files[@]})) || files=(README.md)

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

rm -rf "$scratch"
mkdir -p "$scratch/bin" "$scratch/work" "$scratch/pkgconfig" "$scratch/blocks"
scratch=$(realpath "$scratch")
ln -s "$cli" "$scratch/bin/sqlock"
ln -s "$src/examples" "$scratch/work/examples"
cat >"$scratch/pkgconfig/sqlock.pc" <<EOF
Name: sqlock
Description: sqlock in the build tree $build (tests/docs/check_readme.sh)
Version: 0
Libs: -L$build -lsqlock -Wl,-rpath,$build
Cflags: -I$src/include -I$build/generated/include -std=c++20
EOF
export PATH="$scratch/bin:$PATH"
export PKG_CONFIG_LIBDIR="$scratch/pkgconfig" PKG_CONFIG_PATH=
unset SQLOCK_PASSWORD_FILE SQLOCK_MODULE_DIR
default_url="sqlite://$scratch/readme.db"
SQLOCK_URL=$default_url sqlock migrate >/dev/null

# Databases created on the PostgreSQL test server, dropped at exit.
pg_databases=()
cleanup() {
    local db
    for db in "${pg_databases[@]}"; do
        psql -q "$SQLOCK_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
            >/dev/null 2>&1 || echo "check_readme: could not drop database $db" >&2
    done
}
trap cleanup EXIT

# "examples as one line each, stripped": what a C++ block must be part of.
strip() { sed 's/^[[:space:]]*//; s/[[:space:]]*$//'; }

ran=0 skipped=0 cpp=0
for file in "${files[@]}"; do
    path=$src/$file
    [[ -f $path ]] || { fail "$file: no such file"; continue; }
    # Split FILE into blocks: blocks/N.LANG (+ N.skip with the reason), in file order.
    rm -f "$scratch"/blocks/*
    awk -v dir="$scratch/blocks" '
        /^```/ && !inblock {
            inblock = 1; n++; lang = substr($0, 4); sub(/[[:space:]].*/, "", lang)
            if (lang == "") lang = "text"
            out = sprintf("%s/%03d.%s", dir, n, lang)
            printf "" > out
            if (reason != "") { print reason > sprintf("%s/%03d.skip", dir, n) }
            reason = ""; next
        }
        /^```/ && inblock { inblock = 0; close(out); next }
        inblock { print > out; next }
        /^<!-- not run: .* -->$/ { reason = $0; sub(/^<!-- not run: /, "", reason); sub(/ -->$/, "", reason); next }
        /[^[:space:]]/ { reason = "" }
    ' "$path"

    if [[ $file == README.md ]]; then
        lines=$(wc -l <"$path")
        ((lines <= 250)) || fail "README.md has $lines lines (at most 250)"
        end=$(awk '/^```/ { if (inblock && pg) { print NR; exit } inblock = !inblock; next }
                   inblock && /^export SQLOCK_URL=postgresql:\/\// { pg = 1 }' "$path")
        if [[ -z $end ]]; then
            fail "README.md: no quickstart block that sets a postgresql:// SQLOCK_URL"
        elif ((end > 80)); then
            fail "README.md: the quickstart ends at line $end (within the first 80, please)"
        fi
        grep -q 'tools/test-all\.sh' "$path" || fail "README.md does not name tools/test-all.sh"
    fi

    for block in "$scratch"/blocks/*; do
        case $block in *.skip) continue ;; esac
        name=$(basename "$block")
        n=${name%%.*} lang=${name#*.}
        where="$file block $((10#$n)) ($lang)"
        case $lang in
        cpp)
            cpp=$((cpp + 1))
            want=$(strip <"$block")
            found=""
            for example in "$src"/examples/*.cpp; do
                if [[ $(strip <"$example") == *"$want"* ]]; then
                    found=$example
                    break
                fi
            done
            if [[ -n $found ]]; then
                echo "ok: $where is part of examples/$(basename "$found")"
            else
                fail "$where is not part of any examples/*.cpp, word for word:"
                cat "$block" >&2
            fi
            ;;
        sh)
            if [[ -f $scratch/blocks/$n.skip ]]; then
                skipped=$((skipped + 1))
                echo "not run: $where: $(cat "$scratch/blocks/$n.skip")"
                continue
            fi
            script=$scratch/blocks/$n.run.sh
            cp "$block" "$script"
            if grep -qE '^export SQLOCK_URL=postgresql://' "$block"; then
                if [[ -z ${SQLOCK_TEST_POSTGRES_URL:-} ]]; then
                    if ((require_pg)); then
                        fail "$where needs PostgreSQL, and SQLOCK_TEST_POSTGRES_URL is not set" \
                            "(run the tests under tools/testdb.sh, as tools/test-all.sh does)"
                    else
                        skipped=$((skipped + 1))
                        echo "not run: $where: no SQLOCK_TEST_POSTGRES_URL (--require-postgresql makes this fail)"
                    fi
                    continue
                fi
                db=sqlock_docs_$$_${#pg_databases[@]}
                if ! psql -q "$SQLOCK_TEST_POSTGRES_URL" -c "CREATE DATABASE $db" >/dev/null; then
                    fail "$where: could not create database $db on the test server"
                    continue
                fi
                pg_databases+=("$db")
                url="${SQLOCK_TEST_POSTGRES_URL%/*}/$db"
                sed -i -E "s|^export SQLOCK_URL=postgresql://[^[:space:]]*|export SQLOCK_URL='$url'|" "$script"
            fi
            while IFS= read -r stub; do
                [[ -e $scratch/work/$stub ]] && continue
                # shellcheck disable=SC2016 # $SQLOCK_TOKEN is the stub's, when it runs
                printf '#!/bin/sh\necho "%s: ran with token $SQLOCK_TOKEN"\n' "$stub" \
                    >"$scratch/work/$stub"
                chmod +x "$scratch/work/$stub"
            done < <(grep -oE '\./[A-Za-z0-9_-]+\.sh' "$block" | sort -u)
            echo "--- $where"
            sed 's/^/    /' "$block"
            ran=$((ran + 1))
            rc=0
            (cd "$scratch/work" && SQLOCK_URL=$default_url timeout 120 sh -e "$script") || rc=$?
            ((rc == 0)) || fail "$where exited $rc"
            ;;
        esac
    done
done

((ran > 0)) || fail "no shell block ran"
if ((failures)); then
    echo "check_readme: $failures failure(s)" >&2
    exit 1
fi
echo "check_readme: ${files[*]}: $ran shell blocks ran as written, $cpp C++ blocks are in" \
    "examples/, $skipped not run (above, with the reason)"
