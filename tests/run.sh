#!/bin/sh
# Run every test binary in BUILD/tests and every tests/cli/*.sh script.
# Each prints "PASS name" / "FAIL name: why" lines; a program that exits
# non-zero without printing a FAIL line (a crash) counts as one failure.
# A program with a FAIL also gets the end of its other output shown.
# The last line is the suite's "N passed, N failed".
B=${1:-build}
export MLC_BUILD="$B"
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
log=$(mktemp)
# mlc-tune keeps reference outputs under $XDG_CACHE_HOME (--ref-cache):
# the suite's go to a directory of its own, removed at the end.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
pass=0; fail=0
start=$(date +%s)
run_one() {
  name=$1; shift
  t0=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  grep -E '^(PASS|FAIL|SKIP) ' "$log"
  p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $name: exited with status $rc; last output:"; tail -n 15 "$log" | sed 's/^/    /'
    f=1
  elif [ "$f" -ne 0 ]; then
    # what else it said (a child's error on stderr, say), for CI's log
    echo "# $name: other output (last 15 lines):"
    grep -Ev '^(PASS|FAIL|SKIP) ' "$log" | tail -n 15 | sed 's/^/    /'
  fi
  echo "# $name: $p passed, $f failed ($(( $(date +%s) - t0 ))s)"
  pass=$((pass + p)); fail=$((fail + f))
}
for t in "$B"/tests/test_*; do
  [ -x "$t" ] || continue
  run_one "$(basename "$t")" "$t"
done
for s in tests/cli/*.sh; do
  [ -f "$s" ] || continue
  run_one "$(basename "$s")" sh "$s"
done
rm -f "$log"
rm -rf "$XDG_CACHE_HOME"
echo "# suite took $(( $(date +%s) - start ))s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
