#!/usr/bin/env bash
# The Debian packages, as the README builds and installs them:
#   cmake --preset deb && cmake --build --preset deb && cpack --preset deb
#   apt-get install ./build/deb/*.deb       (apt resolves their Depends)
# then checks that
#   - lintian finds no error (but the maintainer's mail host: a packager sets
#     -DSQLOCK_DEBIAN_MAINTAINER) and no warning but those listed at the check;
#   - `sqlock` runs from /usr/bin against SQLite, and `man sqlock` finds the page;
#   - `ldd` of sqlock and libsqlock lists no database client library; each module lists its own;
#   - tests/install's consumer builds against the installed headers with CMake (also with
#     find_package(sqlock COMPONENTS sqlite)) and with pkg-config, and runs;
#   - the C API: libsqlock-c1 holds libsqlock-c.so.1, which exports the sqlock_* functions
#     only; a C program (examples/c/lock.c) builds against the installed sqlock.h with
#     pkg-config sqlock-c and with CMake (sqlock::sqlock_c), and runs;
#   - python3-sqlock: Debian's python3 imports sqlock from /usr/lib/python3/dist-packages (no
#     PYTHONPATH), its extension loads the installed libsqlock-c, and a lock, a semaphore and an
#     asyncio lock work on SQLite;
#   - sqlock-doc's site opens: /usr/share/doc/sqlock-doc/html/index.html is HTML whose
#     stylesheets, scripts and every relative link of every page are installed files
#     (tests/docs/check_site.py --installed), it is registered with doc-base, and removing the
#     package removes it;
# and removes them again. Needs root (it installs into /usr).
#   tests/packages/run.sh SOURCE_DIR
set -euo pipefail
src=$(realpath "$1")
build=$src/build/deb
work=$(mktemp -d)
packages=()
cleanup() {
    if ((${#packages[@]})); then
        DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq --purge "${packages[@]}" >/dev/null ||
            true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
if [[ $EUID -ne 0 ]]; then
    echo "packages: needs root (apt-get install of the built packages)" >&2
    exit 1
fi

rm -f "$build"/*.deb
(cd "$src" && cmake --preset deb >/dev/null && cmake --build --preset deb -j "$(nproc)" &&
    cpack --preset deb >/dev/null)
mapfile -t debs < <(ls "$build"/*.deb)
for deb in "${debs[@]}"; do
    packages+=("$(dpkg-deb -f "$deb" Package)")
    echo "packages: $(basename "$deb"): Depends: $(dpkg-deb -f "$deb" Depends)"
    if dpkg-deb -f "$deb" Description | grep -q '^ ;'; then
        echo "packages: $(basename "$deb"): a Description line starts with ';' (a CMake list)" >&2
        exit 1
    fi
done
expected="libsqlock-c1 libsqlock-dev libsqlock0 libsqlock0-mysql libsqlock0-postgresql libsqlock0-sqlite python3-sqlock sqlock sqlock-doc"
if [[ $(printf '%s\n' "${packages[@]}" | sort | xargs) != "$expected" ]]; then
    echo "packages: built ${packages[*]}, expected $expected" >&2
    exit 1
fi
# Allowed: the first changelog entry closes no Debian bug (these are not in Debian's archive);
# libsqlock0's postinst/postrm are empty on purpose (ldconfig runs from its trigger; without
# them CPack would write scripts that call ldconfig).
lintian --fail-on error,warning \
    --suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog,initial-upload-closes-no-bugs \
    --suppress-tags maintainer-script-empty "${debs[@]}"
(cd "$src" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./build/deb/*.deb >/dev/null)

# The CLI, as installed: no LD_LIBRARY_PATH, no module directory but the installed one.
env -u LD_LIBRARY_PATH -u SQLOCK_MODULE_DIR sqlock --version
env -u LD_LIBRARY_PATH -u SQLOCK_MODULE_DIR sqlock --url "sqlite://$work/cli.db" migrate
env -u LD_LIBRARY_PATH -u SQLOCK_MODULE_DIR sqlock --url "sqlite://$work/cli.db" \
    run packages-test -- sh -c 'test "$SQLOCK_NAME" = packages-test'
man -w sqlock >/dev/null
MANWIDTH=80 man sqlock 2>/dev/null | grep 'sqlock' >/dev/null

drivers='libpq|libpqxx|libmysqlcppconn|libmariadb|libsqlite3'
libdir=$(dirname "$(realpath /usr/lib/*/libsqlock.so.0)")
for binary in /usr/bin/sqlock "$libdir/libsqlock.so.0" "$libdir/libsqlock-c.so.1"; do
    if ldd "$binary" | grep -E "$drivers"; then
        echo "packages: $binary loads a database client library" >&2
        exit 1
    fi
done
for backend in postgresql:libpq mysql:libmariadb sqlite:libsqlite3; do
    module="$libdir/sqlock0/sqlock-${backend%%:*}.so"
    if ! ldd "$module" | grep "${backend#*:}" >/dev/null; then
        echo "packages: $module does not load ${backend#*:}" >&2
        exit 1
    fi
done

# A program built against the installed development package, both ways.
cmake -S "$src/tests/install" -B "$work/cmake-build" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer" "sqlite://$work/a.db"
pkg-config --exists sqlock sqlock-sqlite sqlock-postgresql sqlock-mysql
# shellcheck disable=SC2046
g++ -o "$work/pc-consumer" "$src/tests/install/consumer.cpp" $(pkg-config --cflags --libs sqlock)
"$work/pc-consumer" "sqlite://$work/b.db"

# The C API, as a C program sees it: the header from libsqlock-dev, the library from
# libsqlock-c1 (and nothing exported but the C API).
if nm -D --defined-only "$libdir/libsqlock-c.so.1" | awk '{ print $3 }' | grep -v '^sqlock_' |
    grep -v '^SQLOCK_C_'; then
    echo "packages: libsqlock-c.so.1 exports symbols outside the C API (above)" >&2
    exit 1
fi
"$work/cmake-build/c_consumer" "sqlite://$work/c.db" "$work/c.store"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Wpedantic -Werror -o "$work/pc-c-consumer" "$src/examples/c/lock.c" \
    $(pkg-config --cflags --libs sqlock-c)
"$work/pc-c-consumer" "sqlite://$work/c.db" "$work/c.store" | grep "older token.*refused" >/dev/null

# The Python package, as Debian's python3 finds it: nothing on PYTHONPATH.
module=$(cd "$work" && env -u PYTHONPATH /usr/bin/python3 -c \
    'import sqlock._sqlock as m; print(m.__file__)')
if [[ $module != /usr/lib/python3/dist-packages/sqlock/_sqlock.cpython-311-*.so ]]; then
    echo "packages: python3 imports sqlock's extension from $module" >&2
    exit 1
fi
resolved=$(ldd "$module" | awk '$1 == "libsqlock-c.so.1" { print $3 }')
if [[ -z $resolved || $(realpath "$resolved") != $(realpath "$libdir/libsqlock-c.so.1") ]]; then
    echo "packages: $module loads libsqlock-c.so.1 from '$resolved', not $libdir" >&2
    exit 1
fi
(cd "$work" && env -u PYTHONPATH /usr/bin/python3 - "sqlite://$work/py.db" <<'PYTHON'
import asyncio, sys
import sqlock
db = sqlock.connect(sys.argv[1])
db.migrate()
with sqlock.Mutex(db, "packages-python") as lock:
    assert lock.owns_lock() and lock.token > 0
with sqlock.Semaphore(db, "packages-python-sem", 2) as sem:
    assert sem.owns_permit()
async def main():
    async with sqlock.Mutex(db, "packages-python") as lock:
        assert lock.token > 1
asyncio.run(main())
print("packages: python3-sqlock", sqlock.__version__, "takes locks")
PYTHON
)

# The documentation site: HTML for every architecture, depending on nothing; its index opens.
site=/usr/share/doc/sqlock-doc/html
deb=$(ls "$build"/sqlock-doc_*_all.deb)
if [[ -n $(dpkg-deb -f "$deb" Depends) ]]; then
    echo "packages: sqlock-doc depends on $(dpkg-deb -f "$deb" Depends)" >&2
    exit 1
fi
python3 "$src/tests/docs/check_site.py" --installed "$site"
grep -qx "Index: $site/index.html" /usr/share/doc-base/sqlock-doc
MANWIDTH=200 man sqlock 2>/dev/null | grep -q "$site/index.html" ||
    { echo "packages: man sqlock does not name $site/index.html" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq --purge sqlock-doc >/dev/null
if [[ -e $site ]]; then
    echo "packages: $site is still there after removing sqlock-doc" >&2
    exit 1
fi
echo "packages: installed, run and built against: ${packages[*]}"
