#!/bin/sh
# Regression check of the libFuzzer harnesses (tests/fuzz/): each runs once
# over its committed corpus (tests/fuzz/corpus/<name>/: seeds and every
# crash found so far), no new inputs. Needs clang (`make fuzz` builds the
# harnesses into build-fuzz/, incrementally); SKIP without it.
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
FB=build-fuzz
CC_FUZZ=${FUZZ_CC:-clang}
if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
  echo "SKIP fuzz_corpus: $CC_FUZZ is not installed (libFuzzer harnesses need clang)"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! make --no-print-directory fuzz FUZZ_CC="$CC_FUZZ" FUZZ_SECONDS=0 >"$log" 2>&1; then
  echo "FAIL fuzz_build: make fuzz failed:"; tail -n 15 "$log" | sed 's/^/    /'
  exit 1
fi
echo "PASS fuzz_build"
for src in tests/fuzz/fuzz_*.c; do
  h=$(basename "$src" .c)
  dir=tests/fuzz/corpus/$h
  if [ "$h" = fuzz_onnx ] && [ ! -d "$dir" ]; then dir=tests/onnx; fi
  set -- "$dir"/*
  if [ ! -e "$1" ]; then echo "FAIL $h: no corpus in $dir"; continue; fi
  # Files given one by one: libFuzzer runs each once and exits.
  if "$FB/$h" -timeout=20 -rss_limit_mb=4096 "$@" >"$log" 2>&1; then
    echo "PASS $h ($# inputs)"
  else
    echo "FAIL $h: an input of $dir fails:"
    grep -E 'Running:|ERROR|SUMMARY|fuzz:' "$log" | tail -n 6 | sed 's/^/    /'
  fi
done
