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
test -x "$work/prefix/bin/sqlock"
test -f "$work/prefix/include/sqlock/sqlock.hpp"
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
