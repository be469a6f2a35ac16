#!/bin/sh
# Run every test binary in BUILD/tests and every tests/cli/*.sh script.
# Each prints "PASS name" / "FAIL name: why" lines; a program that exits
# non-zero without printing a FAIL line (a crash) counts as one failure.
# The last line is the suite's "N passed, N failed".
B=${1:-build}
export MLC_BUILD="$B"
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
log=$(mktemp)
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
echo "# suite took $(( $(date +%s) - start ))s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
