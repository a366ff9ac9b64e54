#!/usr/bin/env bash
# The CLI's manual page and bash completion against the CLI itself:
#   - every command and every --option that `sqlock --help` and `sqlock COMMAND --help` print
#     is in the manual page source (the command's options in the command's own section) and is
#     offered by the completion for that command; every option the manual page describes for a
#     command, and every option the completion offers, is accepted by that command (the built
#     sqlock is asked: no "unknown option");
#   - every environment variable main.cpp reads or sets for the command it runs, and every exit
#     code, is in the manual page;
#   - the completion function completes a few command lines as expected;
#   - the generated page renders with groff without a warning.
#   check_cli_docs.sh SQLOCK_CLI SOURCE_DIR [BUILT_MANPAGE]
# Without BUILT_MANPAGE (configured with SQLOCK_BUILD_MANPAGE=OFF) the render check is not run.
# No database is contacted: SQLOCK_URL is unset and no --url is given.
set -euo pipefail
cli=$1 src=$2 manpage=${3:-}
scd="$src/docs/sqlock.1.scd"
completion="$src/tools/sqlock/sqlock.bash-completion"
unset SQLOCK_URL

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

long_options() { grep -oE -- '--[a-z][a-z-]*[a-z]' | sort -u; }

# --- what the CLI says about itself --------------------------------------------------------
main_help=$("$cli" --help)
# Commands: the "commands:" block of the main help, plus every "sqlock [--url URL] CMD" usage
# line of the commands' own help (that is where `list` is).
commands=$(printf '%s\n' "$main_help" | sed -n '/^commands:/,/^$/p' |
    sed -nE 's/^  ([a-z]+) .*/\1/p')
for c in $commands; do
    commands+=$'\n'$("$cli" "$c" --help | sed -nE 's/.*sqlock \[--url URL\] ([a-z]+).*/\1/p')
done
commands=$(printf '%s\n' "$commands" | sort -u)
[[ $(wc -w <<<"$commands") -ge 8 ]] || fail "found only these commands in --help: $commands"
global_options=$(printf '%s\n' "$main_help" | sed -n '/^global options/,/^$/p' | long_options)

# The commands whose usage line puts a NAME right after the command.
declare -A help_of named
for c in $commands; do
    help_of[$c]=$("$cli" "$c" --help)
    if grep -qE "sqlock \[--url URL\] $c NAME" <<<"${help_of[$c]}"; then
        named[$c]=1
    fi
done
needs_name() { [[ -n ${named[$1]-} ]]; }

# Does `sqlock COMMAND [NAME] OPTION 1` get past OPTION (no "unknown option OPTION")? Without
# a database URL no command gets as far as connecting.
accepts() {
    local command=$1 option=$2 out
    local -a args=("$command")
    needs_name "$command" && args+=(some-name)
    out=$("$cli" "${args[@]}" "$option" 1 2>&1 || true)
    [[ $out != *"unknown option $option"* ]]
}

# --- the manual page source ----------------------------------------------------------------
# scdoc escapes (\_ \*) removed, so that names are found as they are printed.
page=$(sed 's/\\\(.\)/\1/g' "$scd")
# section TITLE-REGEX: the lines of the "# "/"## " sections whose title matches.
section() {
    printf '%s\n' "$page" | awk -v re="$1" '
        /^#+ / { title = $0; sub(/^#+ /, "", title); on = (title ~ re) ; next }
        on'
}
command_section() { section "(^|[ ,:])$1([ ,:]|\$)"; }

for c in $commands; do
    text=$(command_section "$c")
    [[ -n $text ]] || fail "manual page: no section for command '$c'"
    for o in $(long_options <<<"${help_of[$c]}"); do
        grep -qxF -- "$o" <<<"$global_options" && continue
        grep -qF -- "*$o*" <<<"$text" || fail "manual page: '$c' section lacks $o"
    done
    # Every option the section describes (its terms: lines that start with an option) is
    # accepted by one of the commands its title names.
    title=$(printf '%s\n' "$page" | sed -n 's/^## //p' | grep -E "(^|[ ,:])$c([ ,:]|\$)" |
        head -1 || true)
    for o in $(grep -E '^\*-' <<<"$text" | grep -oE -- '\*--?[a-z][a-z-]*\*' | tr -d '*' |
        sort -u); do
        ok=0
        for owner in $commands; do
            [[ $title =~ (^|[ ,:])$owner([ ,:]|$) ]] && accepts "$owner" "$o" && ok=1
        done
        ((ok)) || fail "manual page: '$c' section describes $o, which sqlock does not accept"
    done
done
for o in $(printf '%s\n' "$main_help" | long_options); do
    grep -qF -- "*$o*" <<<"$page" || fail "manual page: lacks $o (in sqlock --help)"
done
globals_text=$(section '^GLOBAL OPTIONS$')
for o in $global_options; do
    grep -qE -- "^\*$o\*|, \*$o\*" <<<"$globals_text" ||
        fail "manual page: GLOBAL OPTIONS lacks $o"
done

# Environment variables the CLI (tools/sqlock/) reads, and those it sets for the command `run`
# starts.
cli_sources=$(ls "$src"/tools/sqlock/*.cpp "$src"/tools/sqlock/*.hpp)
environment=$( (grep -ohE 'getenv\("[A-Z_]+"\)' $cli_sources | sed -E 's/.*"(.*)".*/\1/'
    grep -ohE '"SQLOCK_[A-Z_]+=' $cli_sources | tr -d '"=') | sort -u)
[[ -n $environment ]] || fail "found no environment variables in $cli_sources"
env_text=$(section '^ENVIRONMENT$')
for v in $environment; do
    grep -qx -- "\*$v\*" <<<"$env_text" || fail "manual page: ENVIRONMENT lacks $v"
done

# Exit codes: the CLI's (cli.hpp), check's Nagios codes and those `run` gives when it cannot
# start the command (`W_EXITCODE(...)` in tools/sqlock/).
codes=$( (grep -oE 'exit_[a-z_]+ = [0-9]+' "$src/tools/sqlock/cli.hpp"
    grep -ohE 'nagios_[a-z]+ = [0-9]+' $cli_sources | grep -oE '[0-9]+$'
    grep -ohE '\bW_EXITCODE\([^;]*\)' $cli_sources "$src/tools/sqlock/job_group.cpp") |
    grep -oE '[0-9]+' | sort -un)
[[ $(wc -w <<<"$codes") -ge 12 ]] || fail "found only these exit codes: $codes"
exit_text=$(section '^EXIT STATUS$')
for code in $codes; do
    grep -qE -- "^(\*[0-9]+\*, )*\*$code\*" <<<"$exit_text" ||
        fail "manual page: EXIT STATUS lacks $code"
done
for s in NAME SYNOPSIS DESCRIPTION FILES EXAMPLES 'SEE ALSO'; do
    grep -qx "# $s" <<<"$page" || fail "manual page: no $s section"
done

# --- the bash completion -------------------------------------------------------------------
# shellcheck source=/dev/null
source "$completion"
# complete LINE: COMPREPLY for the command line LINE with the cursor at its end, COMP_WORDS
# split as readline splits them (at blanks and at the COMP_WORDBREAKS characters).
complete_line() {
    COMP_LINE=$1
    COMP_POINT=${#COMP_LINE}
    COMP_WORDS=()
    local rest=$1 word='' ch
    local breaks=${COMP_WORDBREAKS//[[:space:]]/}
    for ((i = 0; i < ${#rest}; i++)); do
        ch=${rest:i:1}
        if [[ $ch == [[:space:]] ]]; then
            [[ -n $word ]] && COMP_WORDS+=("$word")
            word=
        elif [[ $breaks == *"$ch"* ]]; then
            [[ -n $word ]] && COMP_WORDS+=("$word")
            COMP_WORDS+=("$ch") # (runs of break characters are one word; not needed here)
            word=
        else
            word+=$ch
        fi
    done
    COMP_WORDS+=("$word") # the word at the cursor, maybe empty
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _sqlock
    printf '%s\n' "${COMPREPLY[@]}" | sort -u
}
expect() { # expect LINE CANDIDATE...: exactly these candidates
    local line=$1 got want
    shift
    got=$(complete_line "$line" | paste -sd' ')
    want=$(printf '%s\n' "$@" | sort -u | paste -sd' ')
    [[ $got == "$want" ]] || fail "completion of '$line': got [$got], want [$want]"
}

[[ $(complete -p sqlock 2>/dev/null) == "complete -F _sqlock sqlock" ]] ||
    fail "the completion script does not register _sqlock for sqlock"
# Commands: every one --help names, nothing else.
# shellcheck disable=SC2086
expect "sqlock " $commands
expect "sqlock st" status
expect "sqlock re" reap release reseed
expect "sqlock --url sqlite:///tmp/x.db --connect-timeout 2s mi" migrate
expect "sqlock --url postgresql://app:pw@db:5432/app?sslmode=require st" status
expect "sqlock run job --strategy " unique_key select_for_update optimistic_version
expect "sqlock run job --strategy o" optimistic_version
expect "sqlock --url mar" mariadb://
expect "sqlock --version " # nothing after --version
for c in $commands; do
    line="sqlock $c "
    needs_name "$c" && line+="some-name "
    offered=$(complete_line "$line--")
    for o in $(long_options <<<"${help_of[$c]}"); do
        accepts "$c" "$o" || continue # `list --jobs`: in the help shared with status only
        grep -qxF -- "$o" <<<"$offered" || fail "completion: '$line--' does not offer $o"
    done
    for o in $(complete_line "$line-"); do
        accepts "$c" "$o" || fail "completion: '$line-' offers $o, which sqlock rejects"
    done
done
# After "--": the command to run, not sqlock's options.
[[ -z $(complete_line "sqlock run job -- --") ]] ||
    fail "completion: offers sqlock options after '--'"
# The main help's options are all somewhere in the completion script.
for o in $(printf '%s\n' "$main_help" | long_options); do
    grep -qE -- "(^|[ \"(])$o([ \")]|\$)" "$completion" || fail "completion script lacks $o"
done

# --- the generated manual page renders without warnings -----------------------------------
if [[ -n $manpage ]]; then
    # What man(1) runs: groff with tbl, all warnings on.
    if command -v groff >/dev/null; then
        warnings=$(groff -t -man -Tutf8 -ww -z "$manpage" 2>&1 || echo "groff failed")
        [[ -z $warnings ]] || fail "groff warns about $manpage: $warnings"
        lines=$(groff -t -man -Tutf8 "$manpage" 2>/dev/null | wc -l)
        ((lines > 300)) || fail "$manpage renders to only $lines lines"
    else
        fail "groff is not installed (Debian package groff-base)"
    fi
    if [[ -f $manpage.gz ]] && ! zcat "$manpage.gz" | cmp -s - "$manpage"; then
        fail "$manpage.gz is not $manpage gzipped"
    fi
else
    echo "check_cli_docs: no built manual page given (SQLOCK_BUILD_MANPAGE=OFF): not rendered"
fi

if ((failures)); then
    echo "check_cli_docs: $failures failure(s)" >&2
    exit 1
fi
echo "check_cli_docs: the manual page and the completion match the CLI" \
    "($(wc -w <<<"$commands") commands)"
