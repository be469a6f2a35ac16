#!/bin/sh
# Regression check of the libFuzzer harnesses (tests/fuzz/): each replays
# its committed corpus (tests/fuzz/corpus/<name>/: seeds and every crash
# found so far; fuzz_onnx also tests/onnx/ and tests/onnx/overflow/) once, no new inputs. The
# replayers are the harnesses linked with tests/fuzz/replay_main.c by the
# normal build ($B/fuzz/<name>), so this runs under `make asan test` with
# the sanitizers too and needs no clang; `make fuzz` builds the real
# fuzzers.
B=${MLC_BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for src in tests/fuzz/fuzz_*.c; do
  h=$(basename "$src" .c)
  dirs=""
  [ -d "tests/fuzz/corpus/$h" ] && dirs="tests/fuzz/corpus/$h"
  [ "$h" = fuzz_onnx ] && dirs="$dirs tests/onnx tests/onnx/overflow"
  if [ -z "$dirs" ]; then echo "FAIL $h: no corpus in tests/fuzz/corpus/$h"; continue; fi
  if [ ! -x "$B/fuzz/$h" ]; then echo "FAIL $h: $B/fuzz/$h is not built"; continue; fi
  if "$B/fuzz/$h" $dirs >"$log" 2>&1; then
    echo "PASS $h ($(sed -n 's/^replayed \([0-9]*\) inputs$/\1/p' "$log") inputs)"
  else
    echo "FAIL $h: replaying $dirs fails:"
    tail -n 8 "$log" | sed 's/^/    /'
  fi
done
