#!/bin/sh
# The real networks of `make models` (ResNet-18, MobileNetV2, a transformer
# encoder; examples/export_models.py) compiled by mlc-compile and checked
# against PyTorch's outputs, two ways:
#   1. mlc-compile --run on PyTorch's input, output written as .npy;
#   2. mlc-compile -o X.o --header X.h linked with examples/run_model.c into
#      a plain C program that reads the input .npy, calls X_run and writes
#      the output .npy.
# Both must match models/X_out.npy within 1e-4 relative (run_model.c says
# how elements near zero are judged); the max abs and relative errors are
# printed. `--report` must list every kernel the compile reports.
#
#   sh examples/check_models.sh [BUILD_DIR] [MODEL ...]    (default: build)
#
# MLC_DB: a tuning database to replay (default: none, every kernel untuned).
# Skips (exit 0) with a reason when models/ has not been made.
B=${1:-build}
[ $# -gt 0 ] && shift
MODELS=${*:-resnet18 mobilenet_v2 encoder}
MC=$B/bin/mlc-compile
DB=${MLC_DB:-/nonexistent/none.db}
CC=${CC:-cc}
[ -x "$MC" ] || { echo "check_models: $MC is missing (make B=$B all)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
check() {
  name=$1
  shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}
# The shape of a .npy file as C initializer text: "1, 3, 224, 224".
npy_shape() {
  head -c 256 "$1" | LC_ALL=C tr -d '\0' | LC_ALL=C sed -n "s/.*'shape': (\([0-9, ]*\)).*/\1/p" | sed 's/, *$//'
}

for m in $MODELS; do
  onnx=models/$m.onnx in=models/${m}_in.npy ref=models/${m}_out.npy
  if [ ! -f "$onnx" ] || [ ! -f "$in" ] || [ ! -f "$ref" ]; then
    echo "SKIP $m: $onnx, $in or $ref is missing (make models: needs python3-torch)"
    continue
  fi
  "$MC" --model "$onnx" --db "$DB" --run "$in" --run-output "$tmp/${m}_run.npy" --report \
    --repeat 3 >"$tmp/report.txt" 2>"$tmp/err"
  check "${m}_run" test $? -eq 0
  sed -n 's/^kernels total: /  kernels total: /p; s/^run: /  run: /p' "$tmp/report.txt"
  n_kernels=$(sed -n 's/.*: \([0-9]*\) kernels, .*/\1/p' "$tmp/err")
  n_listed=$(grep -c "^${m}_" "$tmp/report.txt")
  check "${m}_report_lists_${n_kernels}_kernels" test -n "$n_kernels" -a "$n_listed" = "$n_kernels"
  "$CC" -std=gnu11 -O1 -DOUT_SHAPE="$(npy_shape "$ref")" examples/run_model.c -lm \
    -o "$tmp/cmp" 2>"$tmp/cc_err" || head -20 "$tmp/cc_err"
  printf '  --run vs PyTorch: '
  "$tmp/cmp" --compare "$tmp/${m}_run.npy" "$ref"
  check "${m}_run_matches_pytorch" test $? -eq 0

  "$MC" --model "$onnx" --db "$DB" -o "$tmp/$m.o" --header "$tmp/$m.h" 2>"$tmp/err"
  check "${m}_object_header" test $? -eq 0 -a -s "$tmp/$m.o" -a -s "$tmp/$m.h"
  "$CC" -std=gnu11 -O0 -I"$tmp" -DMODEL_HEADER="\"$m.h\"" -DMODEL_RUN=${m}_run \
    -DIN_SHAPE="$(npy_shape "$in")" -DOUT_SHAPE="$(npy_shape "$ref")" \
    examples/run_model.c "$tmp/$m.o" targets/runtime/parallel.c targets/runtime/half.c -I. \
    -lpthread -lm -o "$tmp/run_$m" 2>"$tmp/cc_err"
  rc=$?
  check "${m}_links" test $rc -eq 0
  [ $rc -eq 0 ] || head -20 "$tmp/cc_err"
  printf '  linked vs PyTorch: '
  "$tmp/run_$m" "$in" "$tmp/${m}_linked.npy" "$ref"
  check "${m}_linked_matches_pytorch" test $? -eq 0
done
echo "check_models: $fails failed"
[ $fails -eq 0 ]
