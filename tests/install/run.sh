#!/usr/bin/env bash
# Install smoke test: installs the build tree into a temporary prefix, then builds and runs a
# consumer twice: with find_package(sqlock) and with pkg-config.
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
if grep -rqE 'pqxx|cppconn|sqlite3\.h' "$work/prefix/include/sqlock"; then
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
echo "install smoke test passed"
