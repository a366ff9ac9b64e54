#!/usr/bin/env bash
# A build with only the SQLite backend, on a machine that has no PostgreSQL or MySQL client
# library: every file of the installed libpq, libpqxx, Connector/C++ and libmariadb packages is
# hidden (a /dev/null bound over it, in a private mount namespace of this script only), then
#   cmake -DSQLOCK_WITH_POSTGRESQL=OFF -DSQLOCK_WITH_MYSQL=OFF, build, and every test of that
#   build (unit, the SQLite conformance suites, examples, install, ops examples);
#   the same as a static library (BUILD_SHARED_LIBS=OFF): its CLI runs with no module;
# and no binary it built may name one of those libraries. Needs root (mount namespaces).
#   tests/sqlite_only/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(realpath "$1")
build=$2

if [[ -z ${SQLOCK_DRIVERS_HIDDEN:-} ]]; then
    if [[ $EUID -ne 0 ]]; then
        echo "sqlite-only: needs root to hide the client libraries (unshare --mount)" >&2
        exit 1
    fi
    exec unshare --mount --propagation private env SQLOCK_DRIVERS_HIDDEN=1 "$0" "$@"
fi

mapfile -t packages < <(dpkg-query -W -f='${Package}\n' |
    grep -E '^(libpq|libpqxx|libmysqlcppconn|libmariadb|libmysqlclient)' || true)
hidden=0
for package in "${packages[@]}"; do
    while IFS= read -r file; do
        if [[ -f $file && ! -L $file ]]; then
            mount --bind /dev/null "$file"
            hidden=$((hidden + 1))
        fi
    done < <(dpkg -L "$package")
done
echo "sqlite-only: hid $hidden files of ${packages[*]:-no package}"
# The check below would pass for nothing if those packages were not there to hide.
if ((hidden == 0)); then
    echo "sqlite-only: no PostgreSQL/MySQL client package is installed: nothing was hidden" >&2
    exit 1
fi
if printf '#include <pqxx/pqxx>\npqxx::connection* c;\n' |
    g++ -std=c++20 -fsyntax-only -x c++ - 2>/dev/null; then
    echo "sqlite-only: <pqxx/pqxx> still compiles: the hiding failed" >&2
    exit 1
fi

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSQLOCK_WERROR=ON \
    -DSQLOCK_WITH_POSTGRESQL=OFF -DSQLOCK_WITH_MYSQL=OFF \
    -DSQLOCK_BUILD_BENCH=OFF -DSQLOCK_BUILD_TORTURE=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j 4   # the SQLite suites side by side

# The static variant links the SQLite backend into libsqlock.a: its CLI loads no module.
cmake -S "$src" -B "$build-static" -DCMAKE_BUILD_TYPE=Release -DSQLOCK_WERROR=ON \
    -DBUILD_SHARED_LIBS=OFF -DSQLOCK_WITH_POSTGRESQL=OFF -DSQLOCK_WITH_MYSQL=OFF \
    -DSQLOCK_BUILD_TESTS=OFF -DSQLOCK_BUILD_EXAMPLES=OFF -DSQLOCK_BUILD_BENCH=OFF \
    -DSQLOCK_BUILD_TORTURE=OFF -DSQLOCK_BUILD_DOCS=OFF -DSQLOCK_BUILD_MANPAGE=OFF >/dev/null
cmake --build "$build-static" --target sqlock_cli -j "$(nproc)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
SQLOCK_MODULE_DIR=/nonexistent "$build-static/sqlock" --url "sqlite://$scratch/s.db" migrate
SQLOCK_MODULE_DIR=/nonexistent "$build-static/sqlock" --url "sqlite://$scratch/s.db" \
    run static-build -- true
if SQLOCK_MODULE_DIR=/nonexistent "$build-static/sqlock" --url "postgresql://u@127.0.0.1/d" \
    status 2>"$scratch/err"; then
    echo "sqlite-only: the static SQLite-only CLI accepted a PostgreSQL URL" >&2
    exit 1
fi
grep -q "built without the postgresql backend" "$scratch/err"

status=0
while IFS= read -r file; do
    if cmp -s -n 4 "$file" <(printf '\177ELF') &&
        ldd "$file" 2>/dev/null | grep -E 'libpq|libmysqlcppconn|libmariadb|libmysqlclient'; then
        echo "sqlite-only: $file links a PostgreSQL/MySQL client library" >&2
        status=1
    fi
done < <(find "$build" -type f -perm -u+x -o -type f -name '*.so*')
exit $status
