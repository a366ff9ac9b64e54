#!/usr/bin/env bash
# Install smoke test: installs the build tree into a temporary prefix, then builds and runs a
# consumer twice: with find_package(sqlock) and with pkg-config; the same for a C program
# against the C API (examples/c/lock.c: sqlock::sqlock_c, pkg-config sqlock-c).
#   run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/ | head -1)
libdir=${libdir%/}
test -x "$work/prefix/bin/sqlock"
# The installed CLI runs as installed: no ldconfig, no LD_LIBRARY_PATH (relative RUNPATH).
env -u LD_LIBRARY_PATH "$work/prefix/bin/sqlock" --version >/dev/null
env -u LD_LIBRARY_PATH "$work/prefix/bin/sqlock" --url "sqlite://$work/cli.db" migrate >/dev/null
env -u LD_LIBRARY_PATH "$work/prefix/bin/sqlock" --url "sqlite://$work/cli.db" run install-test -- true
# ...and it loads the installed library, not the build tree's.
loaded=$(env -u LD_LIBRARY_PATH ldd "$work/prefix/bin/sqlock" | awk '/libsqlock\.so/ { print $3 }')
if [[ -z $loaded || $(realpath "$(dirname "$loaded")") != "$(realpath "$libdir")" ]]; then
    echo "the installed sqlock loads '${loaded:-no libsqlock}', not $libdir/libsqlock.so" >&2
    exit 1
fi
# The CLI and the library load no database client library; each backend module loads its own.
drivers='libpq|libpqxx|libmysqlcppconn|libmariadb|libsqlite3'
for binary in "$work/prefix/bin/sqlock" "$libdir/libsqlock.so.0"; do
    if env -u LD_LIBRARY_PATH ldd "$binary" | grep -E "$drivers"; then
        echo "$binary loads a database client library" >&2
        exit 1
    fi
done
# (grep without -q here and below: under pipefail, a grep -q that stops reading early fails the
# pipeline with its writer's SIGPIPE, now and then, on a loaded machine.)
for module in "$libdir"/sqlock0/sqlock-*.so; do
    backend=$(basename "$module" .so)
    backend=${backend#sqlock-}
    driver=$(case $backend in postgresql) echo libpq ;; mysql) echo libmariadb ;;
        sqlite) echo libsqlite3 ;; esac)
    if ! env -u LD_LIBRARY_PATH ldd "$module" | grep "$driver" >/dev/null; then
        echo "$module does not load $driver" >&2
        exit 1
    fi
done
# A backend component whose module is not installed is reported, naming its package; the
# CLI says the same when it needs it.
mv "$libdir/sqlock0/sqlock-sqlite.so" "$work/sqlock-sqlite.so"
if cmake -S "$src/tests/install" -B "$work/no-module" -DCMAKE_PREFIX_PATH="$work/prefix" \
    >"$work/no-module.log" 2>&1; then
    echo "find_package(sqlock COMPONENTS sqlite) succeeded without the sqlite module" >&2
    exit 1
fi
tr -s ' \n' ' ' <"$work/no-module.log" | grep "install libsqlock0-sqlite" >/dev/null
if env -u LD_LIBRARY_PATH "$work/prefix/bin/sqlock" --url "sqlite://$work/cli.db" status \
    2>"$work/no-module.err"; then
    echo "sqlock ran on SQLite without the sqlite module" >&2
    exit 1
fi
grep -q "the sqlite backend is not installed.*install the package libsqlock0-sqlite" \
    "$work/no-module.err"
mv "$work/sqlock-sqlite.so" "$libdir/sqlock0/sqlock-sqlite.so"
if grep -rqE 'pqxx|cppconn|mysql\.h|sqlite3\.h' "$work/prefix/include/sqlock"; then
    echo "public headers mention a backend library" >&2
    exit 1
fi

cmake -S "$src/tests/install" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer" "sqlite://$work/a.db"

PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists sqlock
# shellcheck disable=SC2046
g++ -o "$work/pc-consumer" "$src/tests/install/consumer.cpp" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs sqlock)
LD_LIBRARY_PATH="$libdir" "$work/pc-consumer" "sqlite://$work/b.db"

# The C API: a C99 program, with CMake (sqlock::sqlock_c, built above) and with pkg-config.
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/c_consumer" "sqlite://$work/c.db" "$work/c.store"
PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists sqlock-c
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Wpedantic -Werror -o "$work/pc-c-consumer" "$src/examples/c/lock.c" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs sqlock-c)
LD_LIBRARY_PATH="$libdir" "$work/pc-c-consumer" "sqlite://$work/c.db" "$work/c.store" |
    grep "older token.*refused" >/dev/null
# libsqlock-c exports the C API and nothing else.
if nm -D --defined-only "$libdir/libsqlock-c.so.1" | awk '{ print $3 }' | grep -v '^sqlock_' |
    grep -v '^SQLOCK_C_'; then
    echo "libsqlock-c.so.1 exports symbols outside the C API (above)" >&2
    exit 1
fi
echo "install smoke test passed"
