#!/usr/bin/env bash
# The ABI of libsqlock-c against its committed baseline (the ctest capi.abi):
#   - the exported symbols (nm -D --defined-only, with their versions) are exactly those of
#     sqlock-c.symbols: only the sqlock_* functions of include/sqlock/sqlock.h, nothing else;
#   - abidiff (Debian package abigail-tools) finds no difference between the library and
#     sqlock-c.abi (abidw's dump of the released ABI, types of sqlock.h only): a function
#     removed or changed, a struct or enum changed, but also one added.
#
#   check_abi.sh LIBRARY SOURCE_DIR            check (exit 0: same ABI)
#   check_abi.sh --update LIBRARY SOURCE_DIR   rewrite the baseline from LIBRARY
#
# Changing the ABI on purpose (docs/site/guides/c-api.md, "Versions and ABI"): an addition
# (a function, a field at the end of an option struct, an enum value) raises
# SQLOCK_C_API_VERSION_MINOR (sqlock.h and SQLOCK_C_API_MINOR in CMakeLists.txt) and puts new
# functions in a node SQLOCK_C_1.<minor> of src/capi/sqlock-c.map; anything else (a removal,
# a changed signature or layout) is a new major version: SONAME libsqlock-c.so.<major>. Then
# build the library with debug info (preset ci) and update the baseline in the same commit:
#   tests/capi/abi/check_abi.sh --update build/ci/libsqlock-c.so.1 .
set -euo pipefail
update=0
if [[ ${1:-} == --update ]]; then
    update=1
    shift
fi
(($# == 2)) || { sed -n '9,10p' "$0" | sed 's/^# *//' >&2; exit 2; }
lib=$1 src=$2
dir=$src/tests/capi/abi
for tool in abidw abidiff nm; do
    command -v "$tool" >/dev/null || {
        echo "capi.abi: $tool is missing (Debian: apt-get install abigail-tools binutils)" >&2
        exit 1
    }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nm -D --defined-only "$lib" | awk '{ print $3 }' | LC_ALL=C sort >"$work/symbols"
# Only the types of the public header, without source locations: the dump changes only when
# the ABI does.
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --type-id-style hash \
    --headers-dir "$src/include/sqlock" --drop-private-types --exported-interfaces-only \
    --out-file "$work/current.abi" "$lib"
if ! grep -q "<function-decl name='sqlock_db_open'" "$work/current.abi"; then
    echo "capi.abi: abidw found no type information in $lib (build it with debug info)" >&2
    exit 1
fi

if ((update)); then
    cp "$work/symbols" "$dir/sqlock-c.symbols"
    cp "$work/current.abi" "$dir/sqlock-c.abi"
    echo "capi.abi: baseline updated from $lib ($(wc -l <"$dir/sqlock-c.symbols") symbols)"
    exit 0
fi

status=0
if ! diff -u "$dir/sqlock-c.symbols" "$work/symbols"; then
    echo "capi.abi: the exported symbols differ from tests/capi/abi/sqlock-c.symbols (above)" >&2
    status=1
fi
rc=0
abidiff --no-show-locs "$dir/sqlock-c.abi" "$work/current.abi" >"$work/report" 2>&1 || rc=$?
if ((rc != 0)); then
    cat "$work/report"
    # abidiff's exit status is a bit field: 1 error, 2 usage, 4 ABI change, 8 incompatible.
    if ((rc & 8)); then
        echo "capi.abi: an INCOMPATIBLE ABI change (above): that needs a new SONAME" >&2
    elif ((rc & 4)); then
        echo "capi.abi: the ABI changed (above); if on purpose, see the top of $0" >&2
    else
        echo "capi.abi: abidiff failed (exit $rc)" >&2
    fi
    status=1
fi
((status)) || echo "capi.abi: $(wc -l <"$work/symbols") symbols, ABI as in tests/capi/abi/sqlock-c.abi"
exit $status
