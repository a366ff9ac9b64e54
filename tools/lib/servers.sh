# shellcheck shell=bash
# What the scripts that start throwaway test servers share: tools/testdb.sh and
# tools/cluster/*.sh (the cluster checks use die, say and usage_full only). Sourced, never run,
# with a path relative to the sourcing script:
#   source "$(dirname "$(realpath "$0")")/lib/servers.sh"       (tools/testdb.sh)
#   source "$(dirname "$(realpath "$0")")/../lib/servers.sh"    (tools/cluster/*.sh)
# It sets no shell options and runs nothing when sourced but the assignments of SELF and
# START_ARGS. The sourcing script sets before it
#   TOOL=NAME                    the prefix of its messages ("testdb", "galera", ...)
#   SERVER_USERS=(postgres ...)  (a server script) the OS users its servers run as when it runs
#                                as root (postgres, mysql): for setup_users and check_traversable
# and, for start_failed and do_run, defines do_stop and has "start" and "stop" commands.
#
#   die MSG... / say MSG...      "TOOL: MSG" on stderr; die exits 1
#   usage / usage_full           the script's header comment from line 4 on, on stderr, exit 2:
#                                up to its first empty comment line (the command list) / all of it
#   install_packages [-OPT...] PKG...   apt-get install -y [-OPT...] PKG... (as root; dies
#                                naming them otherwise); apt-get update only if that fails
#   setup_users                  PG_OS_USER / MY_OS_USER for SERVER_USERS postgres / mysql: the
#                                user itself as root (created if missing), else the caller
#   as_pg CMD...                 CMD as PG_OS_USER (cd / first: it may not reach the cwd)
#   check_traversable            dies unless every server user can reach DIR (as root)
#   check_dir_length MAX         dies if DIR is longer than MAX (unix socket paths: 107 bytes)
#   set_dir CMD DIR              DIR absolute without symlinks; made first for start and run
#   alive PID REGEX              PID is a live, non-zombie process whose command name matches
#   wait_gone PID SECS REGEX     wait up to SECS for it to go; 1 if it did not
#   signal_tree SIG PID          SIG to PID and its children
#   stop_process WHAT PID REGEX SECS CMD...   stop it by running CMD, SIGKILL if that fails
#   pick_port [PORT...]          a free TCP port (SQLOCK_TEST_PORTS), not one of PORT...
#   random_password              32 hex digits
#   env_set NAME VALUE           rewrite "export NAME=..." in DIR/env.sh (a pid after a restart)
#   mariadb_accounts_sql PW      SQL for a fresh MariaDB: root over the socket only, database
#                                sqlock_test, user sqlock (password PW, all privileges)
#   start_failed LOG...          "start"'s EXIT trap: LOG...'s tails, then do_stop
#   do_run [--] CMD...           the "run" command: start, CMD with DIR/env.sh, always stop

SELF=$(realpath "$0")

# ---------------------------------------------------------------- messages
die() { echo "$TOOL: $*" >&2; exit 1; }
say() { echo "$TOOL: $*" >&2; }
usage() { print_header list; exit 2; }
usage_full() { print_header full; exit 2; }
print_header() {
  awk -v what="$1" 'NR < 4 { next } !/^#/ || (/^# *$/ && what == "list") { exit }
                    { sub(/^# ?/, ""); print }' "$0" >&2
}

# ---------------------------------------------------------------- packages
# Tries without refreshing the package lists first (quick when they are fresh), then with.
install_packages() {
  local opts=() pkgs
  while [[ ${1:-} == -* ]]; do opts+=("$1"); shift; done
  (($#)) || return 0
  mapfile -t pkgs < <(printf '%s\n' "$@" | sort -u)
  set -- "${pkgs[@]}"
  [[ $EUID -eq 0 ]] || die "missing packages: $*; install them (apt-get install $*) or run as root"
  say "installing $* via apt"
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${opts[@]}" "$@" >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${opts[@]}" "$@" >&2
  }
}

# ---------------------------------------------------------------- users and directories
# PostgreSQL refuses to run as root (so does pgbouncer), and MariaDB should not either, so as
# root the servers run as the unprivileged accounts the Debian packages create.
# shellcheck disable=SC2034  # PG_OS_USER, MY_OS_USER: for the sourcing script
setup_users() {
  local u
  for u in "${SERVER_USERS[@]}"; do
    [[ $u == postgres || $u == mysql ]] || die "setup_users: unknown server user '$u'"
    if [[ $EUID -eq 0 ]]; then
      id -u "$u" >/dev/null 2>&1 ||
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
    fi
    if [[ $u == postgres ]]; then
      PG_OS_USER=$u; [[ $EUID -eq 0 ]] || PG_OS_USER=$(id -un)
    else
      MY_OS_USER=$u; [[ $EUID -eq 0 ]] || MY_OS_USER=$(id -un)
    fi
  done
}

as_pg() {
  if [[ $EUID -eq 0 ]]; then (cd / && runuser -u "$PG_OS_USER" -- "$@"); else "$@"; fi
}

# We do not loosen permissions on somebody else's directories (e.g. /root) silently; we say
# what to fix.
check_traversable() {
  [[ $EUID -eq 0 ]] || return 0
  local u
  for u in "${SERVER_USERS[@]}"; do
    (cd / && runuser -u "$u" -- test -x "$DIR") ||
      die "user '$u' cannot reach $DIR: a parent directory (e.g. /root) lacks o+x; chmod o+x it or use another DIR"
  done
}

check_dir_length() {
  (( ${#DIR} <= $1 )) || die "DIR path too long for unix sockets (${#DIR} > $1 chars): $DIR"
}

set_dir() {
  if [[ $1 == start || $1 == run ]]; then mkdir -p "$2"; fi
  if [[ -d $2 ]]; then DIR=$(cd "$2" && pwd -P); else DIR=$(realpath -m "$2"); fi
}

# ---------------------------------------------------------------- processes
# The name check protects against a stale pid file whose pid got reused.
alive() {
  local pid=$1 stat
  [[ $pid =~ ^[0-9]+$ ]] && stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }                               # fields after "(comm) "
  [[ ${stat%% *} != Z ]] || return 1              # zombie = already exited
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ $2 ]]
}

wait_gone() {
  local deadline=$((SECONDS + $2))
  while alive "$1" "$3"; do ((SECONDS < deadline)) || return 1; sleep 0.1; done
}

# The children as they are now (e.g. PostgreSQL's backends), not as they were earlier: a pid
# read before may have been reused since.
signal_tree() {
  local kids
  kids=$(cat /proc/"$2"/task/*/children 2>/dev/null || true)
  # shellcheck disable=SC2086  # a list of pids
  kill -"$1" "$2" $kids 2>/dev/null || true
}

# Nothing if PID (command name REGEX) is not alive. Else: SIGCONT to it and its children (a
# SIGSTOPped server, tests do that, would never act on the request), CMD (its output dropped),
# up to SECS for it to go, then SIGKILL to it and its children; says so if even that fails
# (WHAT names it).
stop_process() {
  local what=$1 pid=$2 re=$3 secs=$4
  shift 4
  alive "$pid" "$re" || return 0
  signal_tree CONT "$pid"
  "$@" >/dev/null 2>&1 || true
  wait_gone "$pid" "$secs" "$re" && return 0
  signal_tree KILL "$pid"
  wait_gone "$pid" 5 "$re" || say "$what (pid $pid) would not die"
}

# ---------------------------------------------------------------- ports, passwords, env.sh
# A TCP port that nothing has bound (per /proc/net/tcp*) and that is not one of the arguments
# (the caller's earlier picks). The ports come from SQLOCK_TEST_PORTS ("LOW-HIGH", default
# 20000-32000: below the kernel's ephemeral range, so outgoing connections made between the
# pick and the server's start cannot take it). Runs that start servers at the same time
# (tools/test-all.sh) give each its own range, so two of them can never pick the same free port.
pick_port() {
  local range=${SQLOCK_TEST_PORTS:-20000-32000} low high used p hex
  [[ $range =~ ^([0-9]+)-([0-9]+)$ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2])) || {
    echo "pick_port: SQLOCK_TEST_PORTS must be LOW-HIGH, not '$range'" >&2
    return 1
  }
  low=${BASH_REMATCH[1]} high=${BASH_REMATCH[2]}
  used=" $(awk 'FNR > 1 { sub(/.*:/, "", $2); printf "%s ", $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null || true)"
  for _ in {1..500}; do
    p=$((low + (RANDOM * 32768 + RANDOM) % (high - low + 1))); printf -v hex '%04X' "$p"
    [[ " $* " != *" $p "* && $used != *" $hex "* ]] && { echo "$p"; return 0; }
  done
  echo "pick_port: no free TCP port in $range" >&2
  return 1
}

random_password() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# VALUE: digits (no sed specials).
env_set() {
  [[ -f $DIR/env.sh ]] || return 0
  sed -i "s/^export $1=.*/export $1=$2/" "$DIR/env.sh"
}

# mariadb-install-db --auth-root-authentication-method=normal makes a passwordless root (the
# default "socket" ties root to OS user names), also as root@127.0.0.1/::1/<hostname>: dropped
# here (any local user could use them over TCP); root stays reachable over the server's socket
# only (with skip-name-resolve, 'localhost' = socket). sqlock has a password over TCP and the
# socket.
mariadb_accounts_sql() {
  cat <<EOF
DELETE FROM mysql.global_priv WHERE User = 'root' AND Host <> 'localhost';
DELETE FROM mysql.global_priv WHERE User = '';
DELETE FROM mysql.proxies_priv WHERE Host <> 'localhost';
FLUSH PRIVILEGES;
CREATE DATABASE sqlock_test;
CREATE USER 'sqlock'@'127.0.0.1' IDENTIFIED BY '$1';
CREATE USER 'sqlock'@'localhost' IDENTIFIED BY '$1';
GRANT ALL PRIVILEGES ON *.* TO 'sqlock'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'sqlock'@'localhost' WITH GRANT OPTION;
EOF
}

# ---------------------------------------------------------------- commands
# As `trap 'start_failed "$DIR/a.log" ...' EXIT` while "start" runs: a start that dies shows
# what the servers said and leaves nothing running.
start_failed() {
  local f
  say "start failed; log tails follow"
  for f; do
    [[ -s $f ]] && { echo "==> $f <==" >&2; tail -n 30 "$f" >&2; }
  done
  do_stop || true
}

# START_ARGS (set by the script before do_run) follow DIR on the "start" command line.
START_ARGS=()
do_run() {
  [[ ${1:-} == -- ]] && shift
  (($#)) || usage
  trap 'bash "$SELF" stop "$DIR"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # A separate process for start, so that the servers are never children of this shell.
  bash "$SELF" start "$DIR" "${START_ARGS[@]}" >&2
  # shellcheck disable=SC1091
  source "$DIR/env.sh"
  # CMD runs in the background + wait, because bash defers traps until a foreground child
  # exits; this way a TERM to us is forwarded to CMD at once and the EXIT trap stops the
  # servers. <&0 keeps CMD's stdin (bash would otherwise give a background job /dev/null).
  "$@" <&0 &
  local child=$! rc
  trap 'kill -TERM $child 2>/dev/null || true' INT TERM
  while :; do
    wait "$child" && rc=0 || rc=$?
    kill -0 "$child" 2>/dev/null || break   # wait was only interrupted by a signal
  done
  exit "$rc"
}
