#!/bin/sh
# The integer and bool ops compiled by LLVM, not only interpreted: ONNX's
# backend test models of each (libonnx-testdata) through mlc-compile --run,
# which runs the compiled kernels on seeded inputs (integers in [-8, 8):
# zero divisors included) and exits 1 when an output differs from the
# plain C reference. The conformance test checks the same ops against
# ONNX's outputs in the interpreter. SKIPs without libonnx-testdata.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
D=/usr/share/libonnx-testdata/data/node
[ -d "$D" ] || { echo "SKIP onnx_dtypes: $D is missing (apt-get install libonnx-testdata)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
for t in test_mod_mixed_sign_int64 test_mod_mixed_sign_int32 test_mod_mixed_sign_float32 \
  test_mod_int64_fmod test_argmax_no_keepdims_random test_argmin_keepdims_random_select_last_index \
  test_where_example test_where_long_example test_equal test_less test_greater_equal \
  test_less_equal_bcast test_and_bcast3v1d test_or4d test_xor2d test_not_2d test_max_int64 \
  test_min_int32 test_add_bcast test_shape test_cast_FLOAT_to_DOUBLE test_clip_default_int8_min; do
  [ -f "$D/$t/model.onnx" ] || continue
  "$MC" --model "$D/$t/model.onnx" --db /nonexistent/none.db --run --repeat 1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  case $t in
  test_cast_FLOAT_to_DOUBLE | test_clip_default_int8_min) # dtypes the graph does not take
    if [ $rc -eq 1 ] && grep -q "dtype\|graph values are" "$tmp/err"; then echo "PASS refuses_$t"
    else echo "FAIL refuses_$t: exit $rc"; fails=$((fails + 1)); fi ;;
  *)
    if [ $rc -eq 0 ] && grep -q "against the plain C reference" "$tmp/out"; then echo "PASS jit_$t"
    else echo "FAIL jit_$t: exit $rc"; tail -3 "$tmp/err"; fails=$((fails + 1)); fi ;;
  esac
done
echo "onnx_dtypes: $fails failed"
[ $fails -eq 0 ]
