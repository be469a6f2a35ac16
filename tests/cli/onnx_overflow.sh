#!/bin/sh
# Crafted ONNX models whose integer shape arithmetic wraps int64 or asks
# for a tensor past the size limit (tests/onnx/overflow/, written by
# tests/onnx/make_overflow.py): each is refused with exit 1 and a message
# naming its node, nothing written, never a crash or an out-of-bounds read
# (the same script runs under `make asan test`). One model with extreme
# but valid Slice parameters must run and compute the right value.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
D=tests/onnx/overflow
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

seen=""
refused() { # model (without .onnx), expected message
  seen="$seen $1 "
  rm -f "$tmp/m.o" "$tmp/m.h"
  "$MC" --model "$D/$1.onnx" -o "$tmp/m.o" --header "$tmp/m.h" >/dev/null 2>"$tmp/err"
  rc=$?
  check "overflow_${1}_exit1" test $rc -eq 1 -a ! -e "$tmp/m.o" -a ! -e "$tmp/m.h"
  check "overflow_${1}_msg" grep -qF "$2" "$tmp/err"
  "$MC" --model "$D/$1.onnx" --run >/dev/null 2>"$tmp/err"
  check "overflow_${1}_run_exit1" test $? -eq 1
}

refused reshape_gather_1000 "node \"reshape\" (op Reshape, opset 13): the shape's extents multiply past 2^63"
refused reshape_gather_2p40 "node \"reshape\" (op Reshape, opset 13): the shape's extents multiply past 2^63"
refused reshape_wrap "node \"reshape\" (op Reshape, opset 13): the shape's extents multiply past 2^63"
refused reshape_infer_wrap "node \"reshape\" (op Reshape, opset 13): the shape's extents multiply past 2^63"
refused reshape_float_wrap "node \"reshape\" (op Reshape, opset 13): the shape's extents multiply past 2^63"
refused expand_wrap "node \"expand\" (op Expand, opset 13): axis 0 would have more than"
refused tile_wrap "node \"tile\" (op Tile, opset 13): axis 0 would have more than"
refused int_mul_broadcast "node \"mul\" (op Mul, opset 13): the result has shape [65536, 65536]: over the limit"
refused constant_of_shape_wrap "node \"fill\" (op ConstantOfShape, opset 13): the result has shape [4294967296, 4294967296]: over the limit"
refused constant_of_shape_wrap8 "node \"fill\" (op ConstantOfShape, opset 13): the result has shape [2305843009213693953, 8]: over the limit"
refused concat_big "node \"concat\" (op Concat, opset 13): the result has shape [3221225472]: over the limit"
refused range_wrap "node \"range\" (op Range, opset 13): the result has shape [9223372036854775807]: over the limit"
refused range_step_wrap "node \"range\" (op Range, opset 13): element 1 of the range overflows int64"

# Every model in the folder is checked above.
for f in "$D"/*.onnx; do
  m=$(basename "$f" .onnx)
  case "$seen" in *" $m "*) ;; *) fail "overflow_$m" "no expectation in this script" ;; esac
done

# Slice of [1, 2, 3, 4] from INT64_MAX down to INT64_MIN by INT64_MIN:
# valid, the last element only; y = x + 4 = 4.5.
"$MC" --model tests/onnx/slice_extreme.onnx --run tests/onnx/slice_extreme_input.npy --repeat 1 \
  >"$tmp/out" 2>"$tmp/err"
check overflow_slice_extreme_runs test $? -eq 0
check overflow_slice_extreme_value grep -qx 'output y: 4.5' "$tmp/out"
