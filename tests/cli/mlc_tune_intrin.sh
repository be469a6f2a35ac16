#!/bin/sh
# Issue 18's tensor intrinsics end to end with real workers:
#  - matmul_bf16 on a CPU with AVX-512 BF16 (tiled around the bfloat16
#    micro-kernel family) and conv2d_nchwc_int8 on one with AVX-512 VNNI: every candidate measured without error (the
#    workers check each against the unscheduled kernel), the best record
#    tensorized and replayed by mlc-compile --verify;
#  - a user's intrinsic (examples/tensorize/dot_8x4_f32.py) given to
#    mlc-tune --intrin: matmul tuned around it in the workers, its records
#    replaying in mlc-compile / mlc-db only with the same --intrin, and
#    skipped (named) without it; a bad --intrin file refused.
B=${MLC_BUILD:-build}
TUNE=$B/bin/mlc-tune
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4"
USER=examples/tensorize/dot_8x4_f32.py

if grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  "$TUNE" --task matmul_bf16 --shape 16,32,16 --trials 4 --db "$tmp/b.db" $Q >"$tmp/out" 2>"$tmp/err"
  check tune_matmul_bf16_exit test $? -eq 0
  check tune_matmul_bf16_no_errors grep -q '4 measured now (0 errors)' "$tmp/out"
  $B/bin/mlc-compile --task matmul_bf16 --shape 16,32,16 --db "$tmp/b.db" -o "$tmp/b.o" --verify \
    >"$tmp/cout" 2>&1
  check compile_matmul_bf16_exit test $? -eq 0
  rec=$(sed -n 's/.*matmul_bf16 .* record \([0-9]*\) .*/\1/p' "$tmp/cout")
  check compile_matmul_bf16_replayed test -n "$rec"
  $B/bin/mlc-db --db "$tmp/b.db" show "${rec:-0}" --ir >"$tmp/show" 2>&1
  # AMX BF16 tiles where the CPU has them, else AVX-512 BF16; either may take the init in
  check tune_matmul_bf16_tensorized grep -Eq 'sch.tensorize\(.*dense_bf16bf16f32_(amx|avx512bf16)_(init_)?[0-9]+x[0-9]+x[0-9]+' "$tmp/show"
  check show_matmul_bf16_ir grep -Eq 'T.call_extern\("int32", "mlc_x86_(tdpbf16ps|vdpbf16ps)_block' "$tmp/show"
else
  echo "SKIP tune_matmul_bf16: the CPU lacks avx512_bf16"
fi

if grep -q avx512_vnni /proc/cpuinfo 2>/dev/null; then
  "$TUNE" --task conv2d_nchwc_int8 --shape 1,16,6,6,32,3,3 --trials 4 --db "$tmp/c.db" $Q \
    >"$tmp/out" 2>"$tmp/err"
  check tune_conv_int8_exit test $? -eq 0
  check tune_conv_int8_no_errors grep -q '4 measured now (0 errors)' "$tmp/out"
  $B/bin/mlc-compile --task conv2d_nchwc_int8 --shape 1,16,6,6,32,3,3 --db "$tmp/c.db" \
    -o "$tmp/c.o" --verify >"$tmp/cout" 2>&1
  check compile_conv_int8_exit test $? -eq 0
  rec=$(sed -n 's/.*conv2d_nchwc_int8 .* record \([0-9]*\) .*/\1/p' "$tmp/cout")
  check compile_conv_int8_replayed test -n "$rec"
  $B/bin/mlc-db --db "$tmp/c.db" show "${rec:-0}" >"$tmp/show" 2>&1
  check tune_conv_int8_tensorized grep -q 'sch.tensorize(.*dot_16x4_u8i8i32_vnni_nchwc' "$tmp/show"
else
  echo "SKIP tune_conv_int8: the CPU lacks avx512_vnni"
fi

# a user's intrinsic (the search alone: every record tensorized with it)
"$TUNE" --task matmul --shape 32,32,32 --trials 4 --db "$tmp/u.db" $Q --intrin "$USER" --no-default \
  >"$tmp/out" 2>"$tmp/err"
check tune_user_intrin_exit test $? -eq 0
check tune_user_intrin_no_errors grep -q '4 measured now (0 errors)' "$tmp/out"
$B/bin/mlc-db --db "$tmp/u.db" top --task matmul -k 10 --intrin "$USER" >"$tmp/top" 2>&1
check db_user_intrin_replays test "$(grep -c ' ok ' "$tmp/top")" -eq 4
$B/bin/mlc-db --db "$tmp/u.db" top --task matmul -k 10 >"$tmp/top" 2>&1
check db_user_intrin_differs_without test "$(grep -c ' DIFFERS ' "$tmp/top")" -eq 4
$B/bin/mlc-compile --task matmul --shape 32,32,32 --db "$tmp/u.db" -o "$tmp/u.o" --verify \
  --intrin "$USER" >"$tmp/cout" 2>&1
check compile_user_intrin_exit test $? -eq 0
rec=$(sed -n 's/.*matmul .* record \([0-9]*\) .*/\1/p' "$tmp/cout")
check compile_user_intrin_replayed test -n "$rec"
$B/bin/mlc-db --db "$tmp/u.db" show "${rec:-0}" --ir --intrin "$USER" >"$tmp/show" 2>&1
check tune_user_intrin_tensorized grep -q 'sch.tensorize(.*tensor_intrin="dot_8x4_f32")' "$tmp/show"
check show_user_intrin_ir grep -q 'T.vectorized(8)' "$tmp/show"
$B/bin/mlc-db --db "$tmp/u.db" show "${rec:-0}" --ir >"$tmp/show" 2>&1
check show_without_intrin_exit test $? -eq 1
check show_without_intrin_msg grep -q 'no tensor intrinsic named "dot_8x4_f32"' "$tmp/show"
$B/bin/mlc-compile --task matmul --shape 32,32,32 --db "$tmp/u.db" -o "$tmp/u.o" >"$tmp/cout" 2>&1
check compile_without_intrin_exit test $? -eq 0
check compile_without_intrin_untuned grep -q 'untuned (default schedule; record [0-9]* did not replay' "$tmp/cout"

# refusals: a file without intrinsics, a missing file, a worker asked wrongly
printf '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(1)\n' >"$tmp/none.py"
"$TUNE" --task matmul --shape 16,16,16 --trials 4 --db "$tmp/n.db" $Q --intrin "$tmp/none.py" \
  >"$tmp/out" 2>"$tmp/err"
check tune_bad_intrin_exit test $? -eq 1
check tune_bad_intrin_msg grep -q "mlc-tune: error: --intrin $tmp/none.py: no tensor intrinsic" "$tmp/err"
$B/bin/mlc-compile --task matmul --shape 16,16,16 --db "$tmp/n.db" -o "$tmp/n.o" --intrin "$tmp/nosuch.py" \
  >"$tmp/out" 2>"$tmp/err"
check compile_missing_intrin_exit test $? -eq 1
check compile_missing_intrin_msg grep -q "mlc-compile: error: --intrin $tmp/nosuch.py" "$tmp/err"
$B/bin/mlc-worker build --intrin >"$tmp/out" 2>"$tmp/err" </dev/null
check worker_intrin_usage_exit test $? -eq 2
$B/bin/mlc-worker build --intrin "$tmp/none.py" >"$tmp/out" 2>"$tmp/err" </dev/null
check worker_bad_intrin_exit test $? -eq 1
check worker_bad_intrin_msg grep -q "mlc-worker: error: --intrin $tmp/none.py" "$tmp/err"
