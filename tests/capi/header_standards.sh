#!/usr/bin/env bash
# sqlock.h compiles alone, warning-free, as every language standard it promises (the ctest
# capi.header): C99, C11 and C17 with -Wpedantic, and C++11, C++17 and C++20 with the C++
# warnings a strict consumer turns on (old-style casts, 0 as a null pointer...).
#   header_standards.sh C_COMPILER CXX_COMPILER SOURCE_DIR
set -euo pipefail
cc=$1 cxx=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/use.c" <<'C'
#include <sqlock/sqlock.h>
int main(void) {
    sqlock_lock_options o;
    sqlock_lock_options_init(&o);
    return o.ttl_ms > 0 && sqlock_c_api_version() >= SQLOCK_C_API_VERSION ? 0 : 1;
}
C
cp "$work/use.c" "$work/use.cpp"
for std in c99 c11 c17; do
    "$cc" -std=$std -Wall -Wextra -Wpedantic -Wconversion -Wstrict-prototypes -Werror \
        -I"$src/include" -c "$work/use.c" -o "$work/use.o"
done
for std in c++11 c++17 c++20; do
    "$cxx" -std=$std -Wall -Wextra -Wpedantic -Wold-style-cast -Wzero-as-null-pointer-constant \
        -Wconversion -Werror -I"$src/include" -c "$work/use.cpp" -o "$work/use.o"
done
echo "capi.header: sqlock.h compiles as C99/C11/C17 and C++11/C++17/C++20 without warnings"
