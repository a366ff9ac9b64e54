#!/usr/bin/env bash
# Every code block of the README and of the site, proven (issue 33). For README.md also: at most
# 250 lines, the quickstart (up to the first block that sets a postgresql:// SQLOCK_URL) within
# the first 80, and tools/test-all.sh named as the test command.
#
#   check_readme.sh [--require-postgresql] SQLOCK_CLI SOURCE_DIR BUILD_DIR SCRATCH_DIR [MARKDOWN...]
#
# MARKDOWN defaults to README.md; a directory stands for every *.md under it, in sorted order
# (paths relative to SOURCE_DIR). Each fenced block (``` at any indentation) is proven in one of
# the ways below, chosen by a marker, an HTML comment on its own line before the opening fence
# (blank lines may come between), or without one by the block's language. A block that none
# of them covers FAILS: give it a marker.
#
#   ```sh                     runs as written, in its own `sh -e`, in SCRATCH_DIR/work (where
#                             `examples` is the source tree's), with the built sqlock first on
#                             PATH and SQLOCK_URL set to a migrated SQLite file of the scratch
#                             directory (a block may export its own); blocks run in file order
#                             and share the work directory, so a later block may use what an
#                             earlier one built (./basic); `pkg-config sqlock` (and sqlock-c, the C
#                             API) describes the build tree (BUILD_DIR's libraries, the source
#                             headers); each ./NAME.sh a
#                             block names and the work directory lacks is a stub that prints its
#                             $SQLOCK_TOKEN (the pages' jobs are placeholders). A block with a line
#                             `export SQLOCK_URL=postgresql://…` runs against a database of its
#                             own, created for it on the test server of $SQLOCK_TEST_POSTGRES_URL
#                             (tools/testdb.sh) and dropped afterwards; that URL replaces the one
#                             written. No block may take more than 120 s.
#   ```cpp                    is a piece of one of examples/*.cpp word for word (indentation
#                             aside): those are built and run as tests (example.*). Any other C++
#                             block is compiled and linked against BUILD_DIR's libsqlock as a
#                             fragment: the body of a function with `sqlock::database& db` in
#                             scope, after tests/docs/snippet_prelude.hpp (the stand-ins for the
#                             application's own code); its leading #include and using lines go
#                             before that function. Errors name the page's lines.
#   ```python                 runs as written with Debian's /usr/bin/python3 (not the python3
#                             first on PATH), in its own process, in SCRATCH_DIR/work with the
#                             same SQLOCK_URL as the sh blocks and BUILD_DIR/python (the
#                             package sqlock as built) on PYTHONPATH; no block may take more
#                             than 120 s. Each block is a whole program (blocks share the work
#                             directory, not variables). A build without the Python package (no
#                             BUILD_DIR/python/sqlock) FAILS such a block.
#   ```sql                    is prepared (PREPARE; without $N parameters: run in a transaction
#                             that is rolled back) on a PostgreSQL database of its own, migrated
#                             by the built sqlock, so every table and function of sqlock it names
#                             must exist with those types.
#   <!-- given: SQL -->       before an sql block: SQL runs first (the application's tables).
#   <!-- source: PATH -->     the block is a run of whole lines of PATH, exactly
#                             (tests/docs/check_protocol.py, which the docs_protocol test runs on
#                             protocol.md).
#   <!-- tree -->             each line that starts in the first column starts with a path of the
#                             source tree (a <placeholder> stands for any name).
#   <!-- not run: REASON -->  not run: it builds for minutes, installs into /usr, runs the test
#                             command or the torture runs, or shows output of a server that is not
#                             here; REASON is printed. Keep them few. Still checked, each command
#                             line (in a block that is not sh, each line after "$ "): one of the
#                             built sqlock parses, dry: run with an SQLite URL in a directory that
#                             does not exist in place of any --url or SQLOCK_URL, it must get as
#                             far as opening the database (exit 69; `check`: 3 naming it; a
#                             command that needs no database: 0), not stop at its usage (64); one
#                             that starts with a script of the source tree names an executable
#                             file whose text has each --option the line gives; `cmake` or `cpack`
#                             with --preset NAME names a preset of CMakePresets.json.
#
# A block that needs PostgreSQL and finds no SQLOCK_TEST_POSTGRES_URL FAILS with
# --require-postgresql (what ctest passes when the backend is built), else it is reported as
# not run.
set -euo pipefail
shopt -s nullglob
require_pg=0
if [[ ${1:-} == --require-postgresql ]]; then
    require_pg=1
    shift
fi
(($# >= 4)) || { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }
cli=$(realpath "$1") src=$(realpath "$2") build=$(realpath "$3") scratch=$4
shift 4
files=()
for arg in "${@:-README.md}"; do
    if [[ -d $src/$arg ]]; then
        while IFS= read -r page; do files+=("${page#"$src"/}"); done \
            < <(find "$src/$arg" -name '*.md' -type f | LC_ALL=C sort)
    else
        files+=("$arg")
    fi
done

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

rm -rf "$scratch"
mkdir -p "$scratch/bin" "$scratch/work" "$scratch/pkgconfig" "$scratch/blocks" "$scratch/dry"
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
cat >"$scratch/pkgconfig/sqlock-c.pc" <<EOF
Name: sqlock-c
Description: sqlock's C API in the build tree $build (tests/docs/check_readme.sh)
Version: 0
Libs: -L$build -lsqlock-c -Wl,-rpath,$build
Cflags: -I$src/include
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

# new_pg_database WHERE: a database of its own on the test server, its URL in $pg_url.
# Returns 1 (having failed, or reported the block as not run) when there is none.
new_pg_database() {
    local db
    if [[ -z ${SQLOCK_TEST_POSTGRES_URL:-} ]]; then
        if ((require_pg)); then
            fail "$1 needs PostgreSQL, and SQLOCK_TEST_POSTGRES_URL is not set" \
                "(run the tests under tools/testdb.sh, as tools/test-all.sh does)"
        else
            skipped=$((skipped + 1))
            echo "not run: $1: no SQLOCK_TEST_POSTGRES_URL (--require-postgresql makes this fail)"
        fi
        return 1
    fi
    db=sqlock_docs_$$_${#pg_databases[@]}
    if ! psql -q "$SQLOCK_TEST_POSTGRES_URL" -c "CREATE DATABASE $db" >/dev/null; then
        fail "$1: could not create database $db on the test server"
        return 1
    fi
    pg_databases+=("$db")
    pg_url="${SQLOCK_TEST_POSTGRES_URL%/*}/$db"
}

# "examples as one line each, stripped": what a C++ block must be part of.
strip() { sed 's/^[[:space:]]*//; s/[[:space:]]*$//'; }

# The commands of BLOCK's command lines (LANG other than sh: only its lines after "$ ") as the
# shell splits them into words (no expansion): one word a line, an empty line after each
# command; operators (| ; && ||) end a command, redirections (> < >>) are dropped with their
# target, and a comment ends the line.
commands_of() { # commands_of BLOCK LANG
    python3 -c '
import shlex, sys
for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    if sys.argv[2] != "sh":
        if not line.startswith("$ "):
            continue
        line = line[2:]
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    skip = False
    for word in lexer:
        if skip:
            skip = False
        elif word and set(word) <= set("<>"):
            skip = True
        elif word and set(word) <= set("|;&()"):
            print()
        else:
            print(word)
    print()' "$1" "$2"
}

# dry_check WHERE LANG BLOCK: the command lines of a block that is not run (see the top).
presets=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("\n".join(p["name"] for k, v in d.items() if k.endswith("Presets") for p in v))' \
    "$src/CMakePresets.json")
dry_url=sqlite://$scratch/dry/no-such-directory/dry.db # SQLite: the sh blocks need it anyway
dry_check() {
    local where=$1 lang=$2 block=$3 word
    local -a w=()
    n_commands=0
    while IFS= read -r word; do
        if [[ -n $word ]]; then
            w+=("$word")
        elif ((${#w[@]})); then
            dry_command "$where" "${w[@]}"
            w=()
        fi
    done < <(commands_of "$block" "$lang")
    ((n_commands)) || echo "    (no command line)"
}
# dry_command WHERE WORD...: one command of a line that is not run.
dry_command() {
    local where=$1 cmd out rc i word
    local -a w=("${@:2}") args
    [[ ${w[0]} == sudo ]] && w=("${w[@]:1}")
    [[ ${w[0]} == *=* ]] && return 0 # an assignment
    cmd=${w[0]} n_commands=$((n_commands + 1))
    case $cmd in
    sqlock)
        args=()
        for ((i = 1; i < ${#w[@]}; i++)); do
            case ${w[i]} in
            --url) i=$((i + 1)) ;;
            --url=*) ;;
            *) args+=("${w[i]}") ;;
            esac
        done
        rc=0
        out=$(cd "$scratch/dry" && SQLOCK_URL=$dry_url timeout 10 "$cli" "${args[@]}" 2>&1) ||
            rc=$?
        if ((rc == 69)) || ((rc == 0)) ||
            { [[ ${args[0]:-} == check ]] && ((rc == 3)) && [[ $out == *"$dry_url"* ]]; }; then
            echo "    parses: ${w[*]}"
        else
            fail "$where: \`${w[*]}\` does not parse (exit $rc): $out"
        fi
        ;;
    cmake | cpack)
        word=""
        for ((i = 1; i < ${#w[@]}; i++)); do
            [[ ${w[i]} == --preset ]] && word=${w[i + 1]:-}
        done
        if [[ -z $word ]]; then
            echo "    not checked: ${w[*]}"
        elif grep -qx -- "$word" <<<"$presets"; then
            echo "    preset exists: ${w[*]}"
        else
            fail "$where: \`${w[*]}\`: no preset $word in CMakePresets.json"
        fi
        ;;
    tools/* | examples/* | ./tools/* | ./examples/*)
        if [[ ! -x $src/$cmd ]]; then
            fail "$where: \`${w[*]}\`: $cmd is not an executable file of the source tree"
            return 0
        fi
        for word in "${w[@]:1}"; do
            if [[ $word == --[a-z]* ]] && ! grep -qF -- "${word%%=*}" "$src/$cmd"; then
                fail "$where: \`${w[*]}\`: $cmd knows no ${word%%=*}"
            fi
        done
        echo "    script and options exist: ${w[*]}"
        ;;
    *) echo "    not checked: ${w[*]}" ;;
    esac
}

# tree_check WHERE BLOCK: the first word of each unindented line is a path of the source tree.
tree_check() {
    local where=$1 block=$2 line path pattern match found n=0 bad=0
    while IFS= read -r line; do
        [[ $line =~ ^[^[:space:]] ]] || continue
        path=${line%%[[:space:]]*}
        n=$((n + 1))
        found=0
        # shellcheck disable=SC2001 # a <placeholder> becomes a glob
        pattern=$(sed 's/<[^>]*>/*/g' <<<"$path")
        # shellcheck disable=SC2086 # the glob is expanded here
        for match in "$src"/$pattern; do
            [[ -e $match ]] && found=1
        done
        ((found)) || { fail "$where: $path is not a path of the source tree"; bad=1; }
    done <"$block"
    ((n)) || { fail "$where: a tree block with no path"; bad=1; }
    ((bad)) || echo "ok: $where: its $n paths exist"
}

# sql_check WHERE BLOCK GIVEN: the block prepared on a migrated PostgreSQL database.
sql_check() {
    local where=$1 block=$2 given=$3 sql
    new_pg_database "$where" || return 0
    if ! SQLOCK_URL=$pg_url sqlock migrate >/dev/null; then
        fail "$where: sqlock migrate failed on $pg_url"
        return 0
    fi
    sql=$(sed 's/[[:space:]]*;[[:space:]]*$//' "$block")
    if grep -qE '\$[0-9]' <<<"$sql"; then
        sql="PREPARE docs_block AS $sql;"
    else
        sql="BEGIN; $sql; ROLLBACK;"
    fi
    if out=$(psql -q -o /dev/null -v ON_ERROR_STOP=1 "$pg_url" -c "${given:-SELECT 1}" \
        -c "$sql" 2>&1); then
        sqls=$((sqls + 1))
        echo "ok: $where is valid on a migrated PostgreSQL database${given:+ (given: $given)}"
    else
        fail "$where is not valid on a migrated PostgreSQL database: $out"
    fi
}

# python_check WHERE BLOCK: the block run by Debian's python3 with the built package.
python_check() {
    local where=$1 block=$2 rc=0
    if [[ ! -d $build/python/sqlock ]]; then
        fail "$where: no Python package in $build/python (SQLOCK_BUILD_PYTHON)"
        return 0
    fi
    echo "--- $where"
    sed 's/^/    /' "$block"
    pythons=$((pythons + 1))
    (cd "$scratch/work" && SQLOCK_URL=$default_url PYTHONPATH=$build/python \
        PYTHONDONTWRITEBYTECODE=1 timeout 120 /usr/bin/python3 "$block") || rc=$?
    ((rc == 0)) || fail "$where exited $rc"
}

# The C++ fragments, compiled together at the end.
fragments=$scratch/fragments.cpp
nfragments=0
printf '#include "%s"\n' "$src/tests/docs/snippet_prelude.hpp" >"$fragments"
add_fragment() { # add_fragment FILE BLOCK FIRST_LINE
    local file=$1 block=$2 first=$3 line hoisting=1 n=0
    nfragments=$((nfragments + 1))
    {
        while IFS= read -r line; do
            if ((hoisting)) && [[ $line =~ ^(#include|using[[:space:]]) ]]; then
                printf '#line %d "%s"\n%s\n' $((first + n)) "$file" "$line"
                n=$((n + 1))
                continue
            fi
            if ((hoisting)); then
                hoisting=0
                printf 'void fragment_%d([[maybe_unused]] sqlock::database& db) {\n{\n' \
                    "$nfragments"
                printf '#line %d "%s"\n' $((first + n)) "$file"
            fi
            printf '%s\n' "$line"
        done <"$block"
        printf '}\n}\n'
    } >>"$fragments"
}

ran=0 pythons=0 skipped=0 cpp=0 compiled=0 quoted=0 trees=0 sqls=0 dry=0
for file in "${files[@]}"; do
    path=$src/$file
    [[ -f $path ]] || { fail "$file: no such file"; continue; }
    # Split FILE into blocks: blocks/N.LANG, its page line in N.line and its marker in N.mark.
    rm -f "$scratch"/blocks/*
    awk -v dir="$scratch/blocks" '
        !inblock && match($0, /^ *```/) {
            inblock = 1; n++; indent = RLENGTH - 3
            lang = substr($0, RLENGTH + 1); sub(/[[:space:]].*/, "", lang)
            if (lang == "") lang = "text"
            out = sprintf("%s/%03d.%s", dir, n, lang)
            printf "" > out
            print NR + 1 > sprintf("%s/%03d.line", dir, n)
            if (mark != "") print mark > sprintf("%s/%03d.mark", dir, n)
            mark = ""; next
        }
        inblock && /^ *```[[:space:]]*$/ { inblock = 0; close(out); next }
        inblock {
            line = $0
            if (substr(line, 1, indent) ~ /^ *$/) line = substr(line, indent + 1)
            print line > out; next
        }
        /^ *<!-- .* -->[[:space:]]*$/ {
            mark = $0; sub(/^ *<!-- */, "", mark); sub(/ *-->[[:space:]]*$/, "", mark); next
        }
        /[^[:space:]]/ { mark = "" }
        END { if (inblock) print "unterminated" > (dir "/unterminated") }
    ' "$path"
    [[ -e $scratch/blocks/unterminated ]] && fail "$file: a code block is never closed"

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

    sources=0
    for block in "$scratch"/blocks/*; do
        name=$(basename "$block")
        case $name in *.line | *.mark | unterminated) continue ;; esac
        n=${name%%.*} lang=${name#*.}
        first=$(cat "$scratch/blocks/$n.line")
        mark=$(cat "$scratch/blocks/$n.mark" 2>/dev/null || true)
        where="$file block $((10#$n)) ($lang, line $first)"
        case $mark in
        "source: "*)
            quoted=$((quoted + 1)) sources=1
            echo "ok: $where quotes ${mark#source: } (check_protocol.py, below)"
            continue
            ;;
        tree)
            trees=$((trees + 1))
            tree_check "$where" "$block"
            continue
            ;;
        "not run: "*)
            skipped=$((skipped + 1)) dry=$((dry + 1))
            echo "not run: $where: ${mark#not run: }"
            dry_check "$where" "$lang" "$block"
            continue
            ;;
        "given: "*) [[ $lang == sql ]] || fail "$where: <!-- given: … --> is for sql blocks" ;;
        "") ;;
        *) fail "$where: unknown marker <!-- $mark --> (see the top of $0)"; continue ;;
        esac
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
                compiled=$((compiled + 1))
                add_fragment "$file" "$block" "$first"
                echo "ok: $where is not part of examples/: compiled as fragment_$nfragments (below)"
            fi
            ;;
        sql)
            sql_check "$where" "$block" "${mark#given: }"
            ;;
        sh)
            script=$scratch/blocks/$n.run.sh
            cp "$block" "$script"
            if grep -qE '^export SQLOCK_URL=postgresql://' "$block"; then
                new_pg_database "$where" || continue
                sed -i -E "s|^export SQLOCK_URL=postgresql://[^[:space:]]*|export SQLOCK_URL='$pg_url'|" "$script"
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
        python)
            python_check "$where" "$block"
            ;;
        *)
            fail "$where is not proven: run it (sh, python), quote a file (<!-- source: PATH -->)," \
                "list paths (<!-- tree -->) or say why not (<!-- not run: REASON -->)"
            ;;
        esac
    done
    if ((sources)); then
        python3 "$src/tests/docs/check_protocol.py" "$src" "$file" ||
            fail "$file: a block does not quote its source (check_protocol.py, above)"
    fi
done

if ((nfragments)); then
    printf 'int main() {}\n' >>"$fragments"
    # shellcheck disable=SC2046 # pkg-config's words
    if g++ -w -o "$scratch/fragments" "$fragments" $(pkg-config --cflags --libs sqlock); then
        echo "ok: $nfragments C++ fragments compiled and linked against $build's libsqlock"
    else
        fail "C++ fragments do not compile (the errors above name their pages; $fragments)"
    fi
fi

((ran + pythons > 0)) || fail "no shell or Python block ran"
if ((failures)); then
    echo "check_readme: $failures failure(s)" >&2
    exit 1
fi
echo "check_readme: ${*:-README.md}: $ran shell blocks ran as written; $pythons Python blocks" \
    "ran; $cpp C++ blocks are in" \
    "examples/ or compiled ($compiled); $sqls SQL blocks valid on PostgreSQL; $quoted quote" \
    "their sources; $trees trees of paths exist; $skipped not run (above, with the reason;" \
    "the command lines of $dry checked)"
