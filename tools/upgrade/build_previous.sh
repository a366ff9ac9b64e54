#!/usr/bin/env bash
# The previous release's sqlock CLI, for the upgrade rig (tests/upgrade/cross_release.sh):
# built once per release commit and cached outside the checkout.
#
#   tools/upgrade/build_previous.sh [--jobs N]
#
# The release is the one tools/upgrade/previous-release names ("TAG COMMIT"). Prints the
# installed prefix on stdout: PREFIX/bin/sqlock, with its libsqlock and backend modules in
# PREFIX/lib (found by the CLI's RUNPATH, not LD_LIBRARY_PATH).
#   - The cache, ${SQLOCK_RELEASE_CACHE:-$HOME/.cache/sqlock/releases}/COMMIT/, is used when its
#     stamp file is there (written last, before the prefix is moved into place whole).
#   - Else the commit is taken from this checkout's git (git archive COMMIT: never the working
#     tree), configured as a Release build of the library, its three backends and the CLI
#     (tests, examples, benchmarks, torture, docs and site off), built through ccache when it
#     is installed (CCACHE_BASEDIR: another build of the same commit hits), with N jobs
#     (default: the number of CPUs), installed into a temporary prefix and moved into place.
#   - Else (a shallow clone without the commit, and no cache) it fails, saying how to fetch it.
# Builds of one commit run one at a time (flock on COMMIT.lock beside it), so a CI clone and a
# developer's checkout on one machine share the build and the cache.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
release_file=$root/tools/upgrade/previous-release
cache=${SQLOCK_RELEASE_CACHE:-$HOME/.cache/sqlock/releases}
jobs=$(nproc)
case ${1:-} in
    "") ;;
    --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [--jobs N]" >&2; exit 2; }; jobs=$2 ;;
    *) echo "usage: $0 [--jobs N]" >&2; exit 2 ;;
esac

die() { echo "build_previous: $*" >&2; exit 1; }
say() { echo "build_previous: $*" >&2; }

# Sets tag and commit from the release file (its one line that is not a comment).
read_release() {
    local line
    line=$(grep -v '^[[:space:]]*\(#\|$\)' "$release_file") || die "no release named in $release_file"
    read -r tag commit extra <<<"$line"
    [[ $tag =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ && $commit =~ ^[0-9a-f]{40}$ && -z ${extra:-} ]] ||
        die "$release_file: want one line 'vX.Y.Z <40-digit commit>', not '$line'"
}

# Where this checkout has the tag, it must point at the commit named (a mistyped bump).
check_tag() {
    local tagged
    tagged=$(git -C "$root" rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null) || return 0
    [[ $tagged == "$commit" ]] || die "$release_file names $tag as $commit, but the tag is $tagged"
}

cached() { [[ -f $1/stamp && -x $1/bin/sqlock ]]; }

# configure_and_build SRC BUILD: the Release build of what the CLI needs, through ccache.
configure_and_build() {
    local launcher=()
    if command -v ccache >/dev/null; then
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    else
        say "ccache is not installed: building without it"
    fi
    # A fixed install prefix (the library finds its modules beside itself, wherever it is), so
    # that every build of the commit compiles the same command lines and hits ccache.
    cmake -S "$1" -B "$2" --no-warn-unused-cli "${launcher[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/opt/sqlock-previous \
        -DCMAKE_INSTALL_LIBDIR=lib -DSQLOCK_BUILD_TESTS=OFF -DSQLOCK_BUILD_EXAMPLES=OFF \
        -DSQLOCK_BUILD_BENCH=OFF -DSQLOCK_BUILD_TORTURE=OFF -DSQLOCK_BUILD_DOCS=OFF \
        -DSQLOCK_BUILD_SITE=OFF -DSQLOCK_BUILD_MANPAGE=OFF -DSQLOCK_WITH_POSTGRESQL=ON \
        -DSQLOCK_WITH_MYSQL=ON -DSQLOCK_WITH_SQLITE=ON >&2
    cmake --build "$2" -j "$jobs" >&2
}

# check_install PREFIX: the CLI runs, says the release's version, and every backend is there.
check_install() {
    local version backend
    version=$(env -u LD_LIBRARY_PATH -u SQLOCK_MODULE_DIR "$1/bin/sqlock" --version) ||
        die "the built $1/bin/sqlock does not run"
    [[ $version == "sqlock ${tag#v}" ]] || die "the built CLI says '$version', not 'sqlock ${tag#v}'"
    for backend in sqlite postgresql mysql; do
        compgen -G "$1/lib/sqlock*/sqlock-$backend.so" >/dev/null || die "no $backend module in $1/lib"
    done
}

# build_release WORK: the commit's tree from git into WORK/src, built, installed in WORK/prefix.
build_release() {
    local work=$1
    mkdir "$work/src"
    git -C "$root" archive "$commit" | tar -x -C "$work/src"
    # Paths below WORK are hashed relative to it: another build of the commit, elsewhere, hits.
    CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=true configure_and_build "$work/src" "$work/build"
    cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
    check_install "$work/prefix"
    echo "sqlock $tag $commit, built $(date -u +%FT%TZ) by $root" >"$work/prefix/stamp"
}

main() {
    read_release
    check_tag
    local dest=$cache/$commit t0=$SECONDS
    mkdir -p "$cache"
    exec 9>"$dest.lock"
    flock 9
    if cached "$dest"; then
        say "$tag ($commit) from the cache: $dest"
        echo "$dest"
        return
    fi
    git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null ||
        die "$tag ($commit) is neither in the cache ($dest) nor in this checkout's git" \
            "(a shallow clone?): fetch it (git fetch origin tag $tag) and run this again"
    say "building $tag ($commit) into $dest"
    rm -rf "$cache/.build-$commit".* # left by a build that was killed (we hold its lock)
    work=$(mktemp -d "$cache/.build-$commit.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    build_release "$work"
    rm -rf "$dest" # a directory without its stamp is a half-made one, from before the stamp
    mv "$work/prefix" "$dest"
    say "built $tag in $((SECONDS - t0)) s: $dest"
    echo "$dest"
}

main
