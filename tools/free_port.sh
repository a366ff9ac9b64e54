# Sourced by the scripts that start test servers (tools/testdb.sh, tools/cluster/*.sh):
#   pick_port [PORT...]   prints a TCP port that nothing has bound (per /proc/net/tcp*) and that
#                         is not one of the arguments (this script's earlier picks).
# The ports come from SQLOCK_TEST_PORTS ("LOW-HIGH", default 20000-32000: below the kernel's
# ephemeral range, so outgoing connections made between the pick and the server's start
# cannot take it). Runs that start servers at the same time (tools/test-all.sh) give each
# its own range, so two of them can never pick the same free port.
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
