#!/bin/sh
# mlc-tune end to end with real workers on tiny workloads: a run fills the
# database, a rerun with the same budget has nothing to do (exit 0), a
# larger budget resumes without measuring a trace twice, --json, a
# --task-file kernel, and the user errors: unknown task, bad shape, bad
# option (exit 2), an unwritable database (exit 1), a cuda target on a
# machine without a CUDA device (exit 1, "no CUDA device: <reason>").
B=${MLC_BUILD:-build}
TUNE=$B/bin/mlc-tune
IR=$B/bin/mlc-ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
# small and quick: random scores, no baseline, one builder
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4"

"$TUNE" --help >"$tmp/help" 2>&1
check tune_help test $? -eq 0
check tune_help_text grep -q 'usage: mlc-tune' "$tmp/help"

"$TUNE" --task nosuch --trials 4 --db "$tmp/x.db" >"$tmp/out" 2>"$tmp/err"
check tune_unknown_task_exit test $? -eq 2
check tune_unknown_task_msg grep -q "mlc-tune: error: unknown task 'nosuch'" "$tmp/err"
"$TUNE" --task matmul --shape 1,2 --trials 4 --db "$tmp/x.db" >"$tmp/out" 2>"$tmp/err"
check tune_bad_shape_exit test $? -eq 2
check tune_bad_shape_msg grep -q 'mlc-tune: error:' "$tmp/err"
"$TUNE" --task matmul --trials zero >"$tmp/out" 2>"$tmp/err"
check tune_bad_trials_exit test $? -eq 2
"$TUNE" --task vecadd --shape 64 --trials 2 --db /nonexistent/dir/x.db $Q >"$tmp/out" 2>"$tmp/err"
check tune_unwritable_db_exit test $? -eq 1
check tune_unwritable_db_msg grep -q 'mlc-tune: error:' "$tmp/err"
# a cuda target goes through the same loop; without the CUDA driver or a
# device it stops before the first round (and before opening the database)
"$TUNE" --task vecadd --shape 64 --trials 2 --target "cuda -arch=sm_80" --db "$tmp/cuda.db" $Q \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ -e /dev/nvidia0 ] && [ $rc -eq 0 ]; then
  pass tune_cuda_ran_on_device
else
  check tune_cuda_no_device_exit test $rc -eq 1
  check tune_cuda_no_device_msg grep -q "^mlc-tune: error: no CUDA device: ." "$tmp/err"
  check tune_cuda_no_device_no_db test ! -e "$tmp/cuda.db"
fi

# a first run: 4 trials of a tiny matmul
"$TUNE" --task matmul --shape 16,16,16 --trials 4 --db "$tmp/a.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_run_exit test $? -eq 0
check tune_run_summary grep -q 'GFLOP/s (record [0-9]*; see it with `mlc-db show [0-9]*`)' "$tmp/out"
check tune_run_trials grep -q 'trials: 0 before, 4 measured now (0 errors)' "$tmp/out"

# the same budget again: nothing to do, exit 0
"$TUNE" --task matmul --shape 16,16,16 --trials 4 --db "$tmp/a.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_nothing_exit test $? -eq 0
check tune_nothing_msg grep -q 'nothing to do' "$tmp/err"

# resume to 6: 2 more, none measured twice (the db keys traces uniquely)
"$TUNE" --task matmul --shape 16,16,16 --trials 6 --db "$tmp/a.db" $Q --json >"$tmp/out" 2>"$tmp/err"
check tune_resume_exit test $? -eq 0
check tune_resume_json grep -q '"trials_before":4,"measured":2' "$tmp/out"
if command -v sqlite3 >/dev/null 2>&1; then
  n2=$(sqlite3 "$tmp/a.db" 'select count(*), count(distinct trace_hash) from records')
  check tune_resume_distinct test "$n2" = "6|6"
  check tune_records_disturbed_column test "$(sqlite3 "$tmp/a.db" 'select count(*) from records where disturbed is null')" = 0
fi
check tune_json_interference grep -Eq '"retimed":[0-9]+,"disturbed":[0-9]+,"disturbed_rounds":[0-9]+' "$tmp/out"
check tune_json_no_check grep -q '"check_base_sec":0,"check_best_sec":0,"not_faster":false,"warning":""' "$tmp/out"

# with the baseline: the default schedule (what an untuned build runs) is
# timed again next to the best at the end; either a speed-up measured side
# by side, or (a best no faster, often the default itself) a WARNING on
# stderr, "no speed-up" in the summary and in the JSON; a kernel this small
# has its unscheduled kernel timed too
"$TUNE" --task matmul --shape 16,16,16 --trials 8 --db "$tmp/a.db" --cost-model random -j 1 \
  --trials-per-round 2 >"$tmp/out" 2>"$tmp/err"
check tune_check_exit test $? -eq 0
if grep -q 'speed-up over the default schedule (what an untuned build runs), timed side by side' "$tmp/out"; then
  check tune_check_no_warning test "$(grep -c WARNING "$tmp/err")" -eq 0
else
  check tune_check_warning grep -q 'mlc-tune: WARNING: the best kernel found .* is not faster than the default schedule' "$tmp/err"
  check tune_check_no_speedup grep -q '^no speed-up: the default schedule (what an untuned build runs) took' "$tmp/out"
fi
check tune_check_unscheduled grep -Eq '^the unscheduled kernel: [0-9.e-]+ ms' "$tmp/out"
# a large kernel: the unscheduled one is not timed (seconds), and said so
"$TUNE" --task matmul --shape 512,512,512 --trials 1 --db "$tmp/big.db" -j 1 >"$tmp/out" 2>"$tmp/err"
check tune_big_exit test $? -eq 0
check tune_big_no_unscheduled grep -q '^the unscheduled kernel was not timed (0.268 GFLOP a call: seconds)' "$tmp/out"
"$TUNE" --task matmul --shape 16,16,16 --trials 10 --db "$tmp/a.db" --cost-model random -j 1 \
  --trials-per-round 2 --json >"$tmp/out" 2>"$tmp/err"
check tune_check_json grep -Eq '"check_base_sec":[0-9.e-]*[1-9][0-9.e-]*,"check_best_sec":[0-9.e-]*[1-9]' "$tmp/out"
if grep -q '"not_faster":true' "$tmp/out"; then
  check tune_check_json_warning grep -q '"warning":"WARNING: the best kernel found' "$tmp/out"
  check tune_check_json_stderr grep -q 'mlc-tune: WARNING' "$tmp/err"
else
  check tune_check_json_quiet grep -q '"not_faster":false,"warning":""' "$tmp/out"
fi

# a busy neighbour started here (busy loops, four per core): the runner
# notices, re-times, and the progress line and summary say so; calls of
# milliseconds (256^3) so that the neighbour takes cores inside them
spin=""
i=0
while [ $i -lt $((4 * $(nproc 2>/dev/null || echo 2))) ]; do
  sh -c 'while :; do :; done' &
  spin="$spin $!"
  i=$((i + 1))
done
"$TUNE" --task matmul --shape 256,256,256 --trials 6 --db "$tmp/busy.db" $Q -v >"$tmp/out" 2>"$tmp/err"
rc=$?
kill $spin 2>/dev/null
wait $spin 2>/dev/null
check tune_busy_exit test $rc -eq 0
check tune_busy_progress grep -Eq '^round [0-9]+: .*; interference: [1-9][0-9]* re-timed, [0-9]+ disturbed' "$tmp/err"
check tune_busy_summary grep -Eq '^interference: [1-9][0-9]* candidates re-timed; [0-9]+ stayed disturbed' "$tmp/out"
if command -v sqlite3 >/dev/null 2>&1; then
  d=$(sqlite3 "$tmp/busy.db" 'select count(*) from records where disturbed = 1')
  check tune_busy_marked grep -Eq "^interference: .*; $d stayed disturbed" "$tmp/out"
fi

# a TVMScript kernel from a file
"$IR" print --task vecadd --shape 64 >"$tmp/k.py"
"$TUNE" --task-file "$tmp/k.py" --trials 2 --db "$tmp/a.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_task_file_exit test $? -eq 0
# stored under the file's stem (not its path), with GFLOP/s from the
# function's own FLOP count (64 adds)
check tune_task_file_summary grep -q '^k on llvm' "$tmp/out"
check tune_task_file_gflops grep -q 'GFLOP/s' "$tmp/out"
"$TUNE" --task-file "$tmp/k.py" --name vadd64 --trials 1 --db "$tmp/a.db" $Q --json >"$tmp/out" 2>"$tmp/err"
check tune_task_file_name grep -q '"task":"vadd64"' "$tmp/out"
check tune_task_file_json_gflops grep -Eq '"best_gflops":([1-9]|0\.0*[1-9])' "$tmp/out"
# mlc-db counts the FLOPs of a --task-file workload from its stored IR
"$B/bin/mlc-db" --db "$tmp/a.db" top --task k -k 1 >"$tmp/out" 2>"$tmp/err"
check db_top_task_file_gflops grep -q 'GFLOP/s' "$tmp/out"

# the other workload kinds tune too (one trial each: it must build and run)
for t in "conv2d_nchw 1,4,8,8,4,3,3" "dense_bias_relu 16,16,16" "softmax 8,32" "batch_matmul 2,8,8,8"; do
  set -- $t
  "$TUNE" --task "$1" --shape "$2" --trials 1 --db "$tmp/b.db" \
    --cost-model random --no-baseline -j 1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 0 ]; then pass "tune_$1_exit"; else fail "tune_$1_exit" "exit $rc: $(head -c 300 "$tmp/err" | tr '\n' ' ')"; fi
  check "tune_$1_ok" grep -q 'trials: 0 before, 1 measured now (0 errors)' "$tmp/out"
done

# every candidate failing: a worker program that exits at once
MLC_WORKER=/bin/false "$TUNE" --task matmul --shape 16,16,16 --trials 2 --db "$tmp/f.db" $Q \
  >"$tmp/out" 2>"$tmp/err"
check tune_all_fail_exit test $? -eq 1
check tune_all_fail_msg grep -q 'mlc-tune: error: all 2 candidates failed; the first: ' "$tmp/err"

# mlc-compile after tuning: the kernel replays the best record, and linked
# into a C program it computes what a plain C matmul computes; without a
# record it says untuned and still works
MC=$B/bin/mlc-compile
"$TUNE" --task matmul --shape 32,24,16 --trials 3 --db "$tmp/c.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_for_compile_exit test $? -eq 0
"$MC" --task matmul --shape 32,24,16 --db "$tmp/c.db" -o "$tmp/mm.o" --header "$tmp/mm.h" 2>"$tmp/err"
check tune_compile_exit test $? -eq 0
check tune_compile_replays grep -q 'matmul .* record [0-9]' "$tmp/err"
cat >"$tmp/mm_main.c" <<'CEOF'
#include "mm.h"
#include <math.h>
#include <stdio.h>
enum { M = 32, N = 24, K = 16 };
int main(void) {
  static float A[M * K], B[K * N], C[M * N];
  unsigned s = 12345;
  for (int i = 0; i < M * K; i++) { s = s * 1103515245u + 12345u; A[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f; }
  for (int i = 0; i < K * N; i++) { s = s * 1103515245u + 12345u; B[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f; }
  if (matmul_call(A, B, C) != 0) return 1;
  double worst = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double ref = 0;
      for (int k = 0; k < K; k++) ref += (double)A[i * K + k] * B[k * N + j];
      worst = fmax(worst, fabs(ref - C[i * N + j]));
    }
  printf("max error %g\n", worst);
  return worst < 1e-4 ? 0 : 2;
}
CEOF
# The runtime from source: $B/libmlcrt.a is sanitized in `make asan test`.
RT_SRC="-I. targets/runtime/parallel.c targets/runtime/half.c"
cc -std=gnu11 -O1 -I"$tmp" "$tmp/mm_main.c" "$tmp/mm.o" $RT_SRC -fopenmp -lm -o "$tmp/mm_main" 2>"$tmp/cc_err"
check tune_compile_links test $? -eq 0
"$tmp/mm_main" >"$tmp/mm_out"
check tune_compile_equals_reference test $? -eq 0
"$MC" --task matmul --shape 32,24,16 --db "$tmp/none.db" -o "$tmp/mm2.o" 2>"$tmp/err"
check tune_compile_untuned_exit test $? -eq 0 -a -s "$tmp/mm2.o"
check tune_compile_untuned_warns grep -q 'matmul .* untuned' "$tmp/err"

# Ctrl-C while tuning: exit 130, the batch in flight is dropped, the
# database stays consistent and the message says how to resume
"$TUNE" --task matmul --shape 64,64,64 --trials 200 --db "$tmp/i.db" $Q >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  sleep 1
  if command -v sqlite3 >/dev/null 2>&1; then
    n=$(sqlite3 "$tmp/i.db" 'select count(*) from records' 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 4 ] && break
  elif [ "$_" -ge 6 ]; then
    break
  fi
done
kill -INT $pid
wait $pid
rc=$?
check tune_sigint_exit test $rc -eq 130
check tune_sigint_resume_msg grep -q 'again to resume' "$tmp/err"
if command -v sqlite3 >/dev/null 2>&1; then
  check tune_sigint_integrity test "$(sqlite3 "$tmp/i.db" 'pragma integrity_check')" = ok
  n1=$(sqlite3 "$tmp/i.db" 'select count(*) from records')
  "$TUNE" --task matmul --shape 64,64,64 --trials $((n1 + 2)) --db "$tmp/i.db" $Q --json >"$tmp/out" 2>"$tmp/err"
  check tune_sigint_resumes grep -q "\"trials_before\":$n1,\"measured\":2" "$tmp/out"
fi

# An ONNX model (the committed tiny CNN): mlc-tune --model takes it as
# mlc-compile does, tunes its kernels for a few trials, and mlc-compile
# --report then replays tuned records; --weights is refused for ONNX, and
# a symbolic input needs --input-shape as in mlc-compile.
O=tests/onnx
"$TUNE" --model $O/tiny_cnn.onnx --trials 6 --trials-per-round 2 --db "$tmp/o.db" $Q >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then pass tune_onnx_model_exit; else fail tune_onnx_model_exit "exit $rc: $(head -c 300 "$tmp/err" | tr '\n' ' ')"; fi
check tune_onnx_model_summary grep -q '^tiny_cnn on .*: [0-9]* tasks' "$tmp/out"
# a model this small fits in any last-level cache: timed warm, as it runs
check tune_onnx_cache_auto grep -q '^mlc-tune: tiny_cnn touches .* MiB a run (weights, inputs, outputs, workspace), within the .* MiB last-level cache: kernels timed with warm caches' "$tmp/err"
"$TUNE" --model $O/tiny_cnn.onnx --cache cold --trials 6 --db "$tmp/o.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_onnx_cache_cold_silent test "$(grep -c 'last-level cache' "$tmp/err")" = 0
"$TUNE" --task matmul --cache lukewarm --db "$tmp/o.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_cache_bad_exit2 test $? -eq 2
check tune_cache_bad_msg grep -q "^mlc-tune: error: --cache wants auto, warm or cold, got 'lukewarm'" "$tmp/err"
"$MC" --model $O/tiny_cnn.onnx --db "$tmp/o.db" --report --repeat 2 >"$tmp/rep" 2>"$tmp/err"
check tune_onnx_compile_exit test $? -eq 0
check tune_onnx_compile_replays grep -q '^tiny_cnn_.* record [0-9]' "$tmp/rep"
"$TUNE" --model $O/tiny_cnn.onnx --weights "$tmp" --trials 2 --db "$tmp/o.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_onnx_weights_exit2 test $? -eq 2
"$TUNE" --model $O/mlp_sym.onnx --trials 2 --db "$tmp/o2.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_onnx_symbolic_exit1 test $? -eq 1
check tune_onnx_symbolic_msg grep -q "input 'x' has a symbolic dimension 0 (N); give its shape with --input-shape" "$tmp/err"
"$TUNE" --model $O/mlp_sym.onnx --input-shape x=2,4 --trials 2 --trials-per-round 2 --db "$tmp/o2.db" $Q >"$tmp/out" 2>"$tmp/err"
check tune_onnx_input_shape_exit test $? -eq 0

# dense_int8 on a CPU with AVX-512 VNNI: every candidate is
# tensorized (the workers register the host's intrinsics to replay them),
# and mlc-compile, another process, replays the best record with them.
if grep -q avx512_vnni /proc/cpuinfo 2>/dev/null; then
  "$TUNE" --task dense_int8 --shape 16,32,16 --trials 4 --db "$tmp/i8.db" $Q >"$tmp/out" 2>"$tmp/err"
  check tune_dense_int8_exit test $? -eq 0
  check tune_dense_int8_no_errors grep -q '4 measured now (0 errors)' "$tmp/out"
  $B/bin/mlc-compile --task dense_int8 --shape 16,32,16 --db "$tmp/i8.db" -o "$tmp/i8.o" --verify \
    >"$tmp/cout" 2>&1
  check compile_dense_int8_exit test $? -eq 0
  rec=$(sed -n 's/.*dense_int8 .* record \([0-9]*\) .*/\1/p' "$tmp/cout")
  check compile_dense_int8_replayed test -n "$rec"
  $B/bin/mlc-db --db "$tmp/i8.db" show "${rec:-0}" >"$tmp/show" 2>&1
  check tune_dense_int8_tensorized grep -q 'sch.tensorize(.*dense_u8i8i32_[a-z_]*_[0-9]*x[0-9]*x[0-9]*' "$tmp/show"
  # mlc-ir replays a trace tensorized with a micro-kernel family member
  $B/bin/mlc-ir print --task dense_int8 --shape 32,64,128 >"$tmp/d8.py"
  $B/bin/mlc-ir apply "$tmp/d8.py" --trace tests/fuzz/corpus/fuzz_trace/tensorize_vnni_block.json \
    >"$tmp/apply" 2>&1
  check ir_apply_vnni_block grep -q '"mlc_x86_vpdpbusd_block"' "$tmp/apply"
else
  echo "SKIP tune_dense_int8: the CPU lacks avx512_vnni"
fi

# A kernel of size vars is tuned at the sizes --size gives, stored with
# them as its shape; a lone size with a max is tuned by default at 1, 16,
# 128 and its max; one without a max and without --size is refused.
S=tests/kernels/sym_softmax.py
"$TUNE" --task-file tests/golden/symbolic.py --trials 4 $Q --db "$tmp/sym.db" >/dev/null 2>"$tmp/err"
check tune_size_needed_exit1 test $? -eq 1
check tune_size_needed_message grep -q "main takes its size seq at run time: tune it at given sizes with --size seq=V" "$tmp/err"
"$TUNE" --task-file "$S" --trials 4 $Q --db "$tmp/sampled.db" >"$tmp/sampled" 2>&1
check tune_size_sampled_exit test $? -eq 0
check tune_size_sampled_sizes test "$(grep -c '^sym_softmax n=\(1\|16\|128\|300\) on' "$tmp/sampled")" -eq 4
"$TUNE" --task-file "$S" --size n=301 --trials 4 $Q --db "$tmp/sym.db" >/dev/null 2>"$tmp/err"
check tune_size_outside_bound grep -q -- "--size n=301 is outside its bounds \[1, 300\]" "$tmp/err"
"$TUNE" --task-file "$S" --size n=64 --trials 4 $Q --db "$tmp/sym.db" --json >"$tmp/sym.json" 2>"$tmp/err"
check tune_size_exit test $? -eq 0
check tune_size_shape grep -q '"shape": *"n=64"' "$tmp/sym.json"
"$TUNE" --task-file tests/kernels/mm_tiled.py --size n=4 --trials 4 $Q --db "$tmp/sym.db" >/dev/null 2>"$tmp/err"
check tune_size_static_refused grep -q -- "--size given, but the function has no size vars" "$tmp/err"

# Tuning carries across sizes: a kernel of size vars tuned at two sizes is
# compiled once, each size's best record that replays on it serving the
# sizes down to the size below, and the sizes it branches at without a
# record (16 and its doublings, its bound) the default schedule of that
# size, neighbours that schedule alike as one (n=1 one record, 2 to 32
# the default at 16 and 32, 33 to 64 the other record, then the defaults
# at 128 and at its bound 160), and the object is right at every size
# (checked from C against plain loops).
D=tests/kernels/sym_dense.py
"$TUNE" --task-file "$D" --size n=1,64 --trials 8 $Q --db "$tmp/dense.db" >/dev/null 2>"$tmp/err"
check tune_size_dense_exit test $? -eq 0
$B/bin/mlc-compile --task-file "$D" --db "$tmp/dense.db" -o "$tmp/dense.o" --header "$tmp/dense.h" 2>"$tmp/cerr"
check tune_size_compile_exit test $? -eq 0
check tune_size_compile_from_record grep -q 'record [0-9]* ([0-9.]* us at n=1,64; default at 32,128,160)' "$tmp/cerr"
cat >"$tmp/dense_main.c" <<'CEOF'
#include <math.h>
#include <stdio.h>
#include "dense.h"
static float X[160 * 256], W[256 * 256], Y[160 * 256];
int main(void) {
  for (int i = 0; i < 160 * 256; i++) X[i] = (float)(i % 13) * 0.125f - 0.75f;
  for (int i = 0; i < 256 * 256; i++) W[i] = (float)(i % 7) * 0.25f - 0.5f;
  int64_t ns[] = {1, 9, 16, 37, 64, 100, 128, 160};
  for (int t = 0; t < 8; t++) {
    int64_t n = ns[t];
    if (sym_dense_call(X, W, Y, n) != 0) return 1;
    for (int64_t i = 0; i < n; i++)
      for (int j = 0; j < 256; j++) {
        double s = 0;
        for (int k = 0; k < 256; k++) s += (double)X[i * 256 + k] * W[k * 256 + j];
        if (fabs(Y[i * 256 + j] - s) > 1e-3 * (1 + fabs(s))) {
          printf("n=%lld: Y[%lld, %d] = %g, want %g\n", (long long)n, (long long)i, j, Y[i * 256 + j], s);
          return 1;
        }
      }
  }
  if (sym_dense_call(X, W, Y, 161) != -2) return 1;
  printf("ok\n");
  return 0;
}
CEOF
if ${CC:-cc} -std=gnu11 -O1 -I"$tmp" "$tmp/dense_main.c" "$tmp/dense.o" -I. targets/runtime/parallel.c \
    targets/runtime/workspace.c -lm -lpthread -o "$tmp/dense_prog" 2>"$tmp/err"; then
  "$tmp/dense_prog" >"$tmp/dense_out" 2>&1
  check tune_size_object_every_size grep -q '^ok$' "$tmp/dense_out"
else
  fail tune_size_object_every_size "cc: $(head -c 300 "$tmp/err")"
fi

# A record of the function of size vars itself (its workload the
# symbolic text) imports like any other (replayed on it and verified) and
# is what mlc-compile then replays; no GFLOP/s is claimed for it.
if command -v python3 >/dev/null 2>&1; then
  $B/bin/mlc-db --db "$tmp/dense.db" export >"$tmp/dense.jsonl" 2>"$tmp/err"
  python3 - "$tmp/dense.jsonl" "$D" >"$tmp/sym.jsonl" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
r = next(r for r in recs if r["shape"] == "n=64" and not r["error"])
r["workload"] = open(sys.argv[2]).read()
r["shape"] = "n=*"
r.pop("sched_hash", None)
print(json.dumps(r))
PYEOF
  $B/bin/mlc-db --db "$tmp/symw.db" import "$tmp/sym.jsonl" >"$tmp/imp" 2>&1
  check tune_size_import_symbolic grep -q "imported 1 records" "$tmp/imp"
  $B/bin/mlc-db --db "$tmp/symw.db" list >"$tmp/list" 2>&1
  check tune_size_symbolic_no_gflops grep -q "n=\* .* - (" "$tmp/list"
  $B/bin/mlc-compile --task-file "$D" --db "$tmp/symw.db" -o "$tmp/symw.o" 2>"$tmp/cerr"
  check tune_size_symbolic_record_used grep -q "record 1 ([0-9.]* us)$" "$tmp/cerr"
else
  echo "SKIP tune_size_import_symbolic: no python3 to rewrite the exported record"
fi
