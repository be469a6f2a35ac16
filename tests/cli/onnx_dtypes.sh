#!/bin/sh
# The integer and bool ops compiled by LLVM, not only interpreted: ONNX's
# backend test models of each (libonnx-testdata) through mlc-compile --run,
# which runs the compiled kernels on seeded inputs (integers in [-8, 8):
# zero divisors included; for models reading inputs as indices, the
# test's own input_*.pb) and exits 1 when an output differs from the
# plain C reference. (TopK's models take k as an input, which must be a
# constant: test_graph_ops compiles topk.) The conformance test checks the same ops against
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
  test_min_int32 test_add_bcast test_shape test_cast_FLOAT_to_DOUBLE test_cast_FLOAT_to_FLOAT16 \
  test_pow_types_int64_int64 test_pow_types_int32_int32 test_pow_types_int64_float32 \
  test_pow_types_int32_float32 test_pow_types_float \
  test_gather_elements_0 test_gather_elements_1 test_gather_elements_negative_indices \
  test_nllloss_NCd1_weight_expanded test_nllloss_NCd1d2d3_none_no_weight_negative_ii_expanded \
  test_scatternd test_scatternd_add test_scatternd_multiply; do
  [ -f "$D/$t/model.onnx" ] || continue
  inputs=""
  case $t in
  test_gather_elements_* | test_nllloss_* | test_scatternd*) # indices: seeded ones would be out of range
    for f in "$D/$t"/test_data_set_0/input_*.pb; do inputs="$inputs --input $f"; done ;;
  esac
  # shellcheck disable=SC2086 # $inputs: words
  "$MC" --model "$D/$t/model.onnx" --db /nonexistent/none.db --run --repeat 1 $inputs >"$tmp/out" 2>"$tmp/err"
  rc=$?
  case $t in
  test_cast_FLOAT_to_DOUBLE | test_cast_FLOAT_to_FLOAT16) # dtypes the graph does not take
    if [ $rc -eq 1 ] && grep -q "dtype\|graph values are" "$tmp/err"; then echo "PASS refuses_$t"
    else echo "FAIL refuses_$t: exit $rc"; fails=$((fails + 1)); fi ;;
  *)
    if [ $rc -eq 0 ] && grep -q "against the plain C reference" "$tmp/out"; then echo "PASS jit_$t"
    else echo "FAIL jit_$t: exit $rc"; tail -3 "$tmp/err"; fails=$((fails + 1)); fi ;;
  esac
done
echo "onnx_dtypes: $fails failed"
[ $fails -eq 0 ]
