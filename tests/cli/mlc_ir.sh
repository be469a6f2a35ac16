#!/bin/sh
# mlc-ir end to end: print a task, check reprints it byte for byte, eval is
# deterministic, errors exit 1 with a located message, bad usage exits 2.
B=${MLC_BUILD:-build}
IR=$B/bin/mlc-ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

"$IR" print --task matmul --shape 128,128,128 >"$tmp/mm.py" 2>"$tmp/err"
check cli_print_matmul_exit test $? -eq 0
check cli_print_matmul_form grep -q 'T.axis.remap("SSR", \[i, j, k\])' "$tmp/mm.py"
check cli_print_has_init grep -q 'with T.init():' "$tmp/mm.py"
check cli_print_has_grid grep -q 'for i, j, k in T.grid(128, 128, 128):' "$tmp/mm.py"
check cli_print_has_reads grep -q 'T.reads(A\[' "$tmp/mm.py"

"$IR" check "$tmp/mm.py" >"$tmp/mm2.py" 2>"$tmp/err"
check cli_check_roundtrip cmp -s "$tmp/mm.py" "$tmp/mm2.py"

for t in $("$IR" --list-tasks | awk '{print $1}'); do
  "$IR" print --task "$t" >"$tmp/$t.py" 2>"$tmp/err" &&
    "$IR" check "$tmp/$t.py" >"$tmp/$t.2.py" 2>>"$tmp/err" &&
    cmp -s "$tmp/$t.py" "$tmp/$t.2.py"
  check "cli_roundtrip_$t" test $? -eq 0
done

# the search bench's workloads (bench/search_suite/) parse and verify
for f in bench/search_suite/*.py; do
  "$IR" check "$f" >/dev/null 2>"$tmp/err"
  check "cli_search_suite_$(basename "$f" .py)" test $? -eq 0
done

"$IR" eval --task softmax --shape 4,16 >"$tmp/e1" 2>&1
r1=$?
"$IR" eval --task softmax --shape 4,16 >"$tmp/e2" 2>&1
check cli_eval_ok test $r1 -eq 0
check cli_eval_deterministic cmp -s "$tmp/e1" "$tmp/e2"
check cli_eval_prints_checksum grep -q 'hash=' "$tmp/e1"

printf '@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n    for i in range(4):\n        A[i] = T.bogus(1)\n' >"$tmp/bad.py"
"$IR" check "$tmp/bad.py" >/dev/null 2>"$tmp/err"
check cli_bad_file_exit1 test $? -eq 1
check cli_bad_file_located grep -q "bad.py:4:[0-9]*:" "$tmp/err"
check cli_bad_file_prefix grep -q "^mlc-ir: error: " "$tmp/err"

: >"$tmp/empty.py"
"$IR" check "$tmp/empty.py" >/dev/null 2>"$tmp/err"
check cli_empty_file_exit1 test $? -eq 1
check cli_empty_file_message grep -q "empty.py:1:1: expected" "$tmp/err"

"$IR" check /nonexistent/file.py >/dev/null 2>"$tmp/err"
check cli_missing_file test $? -eq 1

"$IR" print --task nosuch >/dev/null 2>"$tmp/err"
check cli_unknown_task_exit1 test $? -eq 1
check cli_unknown_task_lists grep -q "matmul" "$tmp/err"

"$IR" print --task matmul --shape 1,2 >/dev/null 2>"$tmp/err"
check cli_bad_shape_exit1 test $? -eq 1

"$IR" frobnicate >/dev/null 2>&1
check cli_unknown_command_exit2 test $? -eq 2
"$IR" >/dev/null 2>&1
check cli_no_command_exit2 test $? -eq 2
"$IR" print --bogus-flag >/dev/null 2>&1
check cli_bad_flag_exit2 test $? -eq 2
"$IR" --help >"$tmp/help" 2>&1
check cli_help grep -q "usage: mlc-ir" "$tmp/help"

for f in tests/golden/*.py; do
  [ -f "$f" ] || continue
  "$IR" check "$f" >/dev/null 2>"$tmp/err"
  check "cli_check_$(basename "$f" .py)" test $? -eq 0
done

# ---- run, build, apply (LLVM backend, schedule replay) ----
"$IR" run --task matmul --shape 32,48,40 >"$tmp/run" 2>"$tmp/err"
check cli_run_exit0 test $? -eq 0
check cli_run_reports grep -Eq '^main: max error [0-9.e+-]+ vs interpreter, [0-9.e+-]+ ms, [0-9.]+ GFLOP/s$' "$tmp/run"

"$IR" run tests/kernels/mm_tiled.py --repeat 2 --min-ms 1 >"$tmp/run" 2>"$tmp/err"
check cli_run_file_exit0 test $? -eq 0
check cli_run_file_reports grep -q '^mm_tiled: max error .* GFLOP/s$' "$tmp/run"

# A module with two functions: each is run and checked.
"$IR" run tests/kernels/blocks.py --repeat 1 --min-ms 1 >"$tmp/run" 2>"$tmp/err"
check cli_run_module_exit0 test $? -eq 0
check cli_run_module_each test "$(grep -c ' ms, ' "$tmp/run")" -ge 2

"$IR" run --task softmax --shape 4,33 --repeat 1 --min-ms 1 >/dev/null 2>&1
check cli_run_softmax test $? -eq 0

# --target cuda on a machine without the CUDA driver or a device: the
# runner's check stops it with the reason (exit 1)
if [ ! -e /dev/nvidia0 ]; then
  "$IR" run --task vecadd --shape 64 --target "cuda -arch=sm_80" >"$tmp/out" 2>"$tmp/err"
  check cli_run_cuda_no_device_exit test $? -eq 1
  check cli_run_cuda_no_device_msg grep -q '^mlc-ir: error: no CUDA device: .' "$tmp/err"
fi

# A result that differs from the reference exits 1: a*a + (a*-1)*a is 0 in
# the interpreter, but the kernel contracts it to one FMA (see targets.h)
# and returns the rounding error of a*a, far above the tolerance of a zero
# reference.
printf '@T.prim_func\ndef main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):\n    for i in range(64):\n        with T.block("B"):\n            vi = T.axis.spatial(64, i)\n            B[vi] = A[vi] * A[vi] + A[vi] * T.float32(-1) * A[vi]\n' >"$tmp/fma.py"
"$IR" run "$tmp/fma.py" --repeat 1 --min-ms 1 >"$tmp/out" 2>"$tmp/err"
check cli_run_mismatch_exit1 test $? -eq 1
check cli_run_mismatch_reported grep -q 'MISMATCH in B' "$tmp/out"

printf '@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n    for i in range(5):\n        A[i] = T.float32(1)\n' >"$tmp/oob.py"
"$IR" run "$tmp/oob.py" >/dev/null 2>"$tmp/err"
check cli_run_bad_program_exit1 test $? -eq 1

"$IR" run >/dev/null 2>&1
check cli_run_no_input_exit2 test $? -eq 2
"$IR" run --task matmul --header x.h >/dev/null 2>"$tmp/err"
check cli_run_wrong_option_exit2 test $? -eq 2
check cli_run_wrong_option_msg grep -q "does not apply to 'run'" "$tmp/err"
"$IR" run --task matmul --target bogus >/dev/null 2>"$tmp/err"
check cli_run_bad_target_exit1 test $? -eq 1
"$IR" run --task matmul --repeat x >/dev/null 2>&1
check cli_run_bad_repeat_exit2 test $? -eq 2
for c in run build apply print eval; do
  "$IR" $c --help >"$tmp/help" 2>&1
  check "cli_help_$c" grep -q "usage: mlc-ir $c" "$tmp/help"
done

# apply: replay a stored 29-instruction trace (made by bench/bench_replay.c).
tr=tests/kernels/matmul_64_trace.json
"$IR" apply --task matmul --shape 64,64,64 --trace $tr --print-trace >"$tmp/sched.py" 2>"$tmp/trace.txt"
check cli_apply_exit0 test $? -eq 0
check cli_apply_parallel grep -q 'in T.parallel(' "$tmp/sched.py"
check cli_apply_vectorized grep -q 'T.vectorized(' "$tmp/sched.py"
check cli_apply_print_trace grep -q 'sch.split(loop=l1, factors=\[v4, v5, v6, v7\], preserve_unit_iters=True)' "$tmp/trace.txt"
"$IR" check "$tmp/sched.py" >"$tmp/sched2.py" 2>"$tmp/err"
check cli_apply_output_reparses cmp -s "$tmp/sched.py" "$tmp/sched2.py"
"$IR" apply --task matmul --shape 64,64,64 --trace $tr --run --repeat 1 --min-ms 1 >"$tmp/out" 2>"$tmp/err"
check cli_apply_run_exit0 test $? -eq 0
check cli_apply_run_checked grep -q '^main: max error .* vs interpreter' "$tmp/out"
"$IR" run --task matmul --shape 64,64,64 --trace $tr --repeat 1 --min-ms 1 >"$tmp/out" 2>"$tmp/err"
check cli_run_trace_exit0 test $? -eq 0
# The same trace on another shape: decisions that no longer fit are resampled.
"$IR" apply --task matmul --shape 48,40,24 --trace $tr --run --repeat 1 --min-ms 1 >"$tmp/out" 2>"$tmp/err"
check cli_apply_resample_exit0 test $? -eq 0
check cli_apply_resample_note grep -q 'resampled' "$tmp/err"
"$IR" apply --task matmul >/dev/null 2>&1
check cli_apply_needs_trace_exit2 test $? -eq 2
"$IR" apply --task matmul --trace /nonexistent.json >/dev/null 2>"$tmp/err"
check cli_apply_missing_trace_exit1 test $? -eq 1
printf '{"insts":[["GetBlock",[],{"name":"nosuch","func_name":"main"},["b0"]]]}' >"$tmp/bad.json"
"$IR" apply --task matmul --trace "$tmp/bad.json" >/dev/null 2>"$tmp/err"
check cli_apply_bad_trace_exit1 test $? -eq 1
check cli_apply_bad_trace_msg grep -q "nosuch" "$tmp/err"
"$IR" apply --task matmul --trace $tr --repeat 3 >/dev/null 2>&1
check cli_apply_repeat_needs_run_exit2 test $? -eq 2

# build: object + header, linked into a C program by the system compiler.
"$IR" build tests/kernels/mm_tiled.py -o "$tmp/mm.o" --header "$tmp/mm.h" 2>"$tmp/err"
check cli_build_exit0 test $? -eq 0
check cli_build_header grep -q 'int32_t mm_tiled_call(float \*A, float \*B, float \*C)' "$tmp/mm.h"
cat >"$tmp/main.c" <<'CEOF'
#include "mm.h"
#include <math.h>
#include <stdio.h>
static float A[64 * 64], B[64 * 64], C[64 * 64];
int main(void) {
  for (int i = 0; i < 64 * 64; i++) { A[i] = (float)(i % 7) - 3; B[i] = (float)(i % 5) * 0.5f; }
  if (mm_tiled_call(A, B, C) != 0) return 3;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      float s = 0;
      for (int k = 0; k < 64; k++) s += A[i * 64 + k] * B[k * 64 + j];
      if (fabsf(s - C[i * 64 + j]) > 1e-3f * (1 + fabsf(s))) { printf("bad %d %d\n", i, j); return 1; }
    }
  printf("ok\n");
  return 0;
}
CEOF
# The runtime from source: $B/libmlcrt.a may be a sanitized build.
if cc -I"$tmp" -I. -o "$tmp/app" "$tmp/main.c" "$tmp/mm.o" targets/runtime/parallel.c targets/runtime/workspace.c -fopenmp -lm 2>"$tmp/err"; then
  "$tmp/app" >"$tmp/out" 2>&1
  check cli_build_links_and_runs grep -q '^ok$' "$tmp/out"
else
  fail cli_build_links_and_runs "$(head -c 300 "$tmp/err")"
fi
"$IR" build --task matmul --shape 16,16,16 -o "$tmp/t.o" --header "$tmp/t.h" 2>"$tmp/err"
check cli_build_task_named_after_task grep -q 'int32_t matmul(void \*\*args);' "$tmp/t.h"
"$IR" build --task matmul --shape 16,16,16 --name my_mm -o "$tmp/t.o" --header "$tmp/t.h" 2>"$tmp/err"
check cli_build_name grep -q 'int32_t my_mm_call(' "$tmp/t.h"
nm "$tmp/t.o" 2>/dev/null | grep -q ' T my_mm$'
check cli_build_symbol test $? -eq 0
"$IR" build --task matmul >/dev/null 2>&1
check cli_build_needs_output_exit2 test $? -eq 2
"$IR" build tests/kernels/blocks.py --name x -o "$tmp/x.o" >/dev/null 2>&1
check cli_build_name_needs_one_func test $? -ne 0

# The notes' tensorize example: the built-in tmm16, an --intrin file, and
# an object that leaves tmm16 to the final link.
X=examples/tensorize
"$IR" apply "$X/matmul.py" --trace "$X/tmm16_trace.json" --print-trace >"$tmp/tz.py" 2>"$tmp/tz.trace"
check cli_tensorize_apply test $? -eq 0
check cli_tensorize_golden cmp -s "$tmp/tz.py" tests/sched_golden/tensorize_tmm16.expected
check cli_tensorize_trace grep -q 'sch.tensorize(block_or_loop=b10, tensor_intrin="tmm16")' "$tmp/tz.trace"
sed 's/"tmm16"/"mytmm"/' "$X/tmm16_trace.json" >"$tmp/my.json"
sed 's/tmm16_/mytmm_/g' "$X/tmm16.py" >"$tmp/mytmm.py"
"$IR" apply "$X/matmul.py" --trace "$tmp/my.json" >/dev/null 2>"$tmp/err"
check cli_tensorize_unknown_exit1 test $? -eq 1
check cli_tensorize_unknown_message grep -q 'no tensor intrinsic named "mytmm"' "$tmp/err"
"$IR" apply "$X/matmul.py" --trace "$tmp/my.json" --intrin "$tmp/mytmm.py" >"$tmp/my.py" 2>"$tmp/err"
check cli_tensorize_intrin_file grep -q 'T.call_extern("int32", "tmm16"' "$tmp/my.py"
"$IR" build "$X/matmul.py" --trace "$X/tmm16_trace.json" -o "$tmp/tz.o" 2>"$tmp/err"
nm "$tmp/tz.o" 2>/dev/null | grep -q ' U tmm16$'
check cli_tensorize_build_extern_symbol test $? -eq 0
# run: the tensorized kernel calls tmm16 from a shared object and matches
# the unscheduled kernel; without --extern it is refused by name.
if cc -shared -fPIC -O1 -o "$tmp/libtmm16.so" "$X/tmm16.c" 2>"$tmp/err"; then
  "$IR" run "$X/matmul.py" --trace "$X/tmm16_trace.json" --extern "$tmp/libtmm16.so" --repeat 1 --min-ms 1 >"$tmp/out" 2>"$tmp/err"
  check cli_tensorize_run_extern grep -q '^main: max error [0-9.e-]* vs interpreter' "$tmp/out"
  "$IR" run "$X/matmul.py" --trace "$X/tmm16_trace.json" --repeat 1 --min-ms 1 >/dev/null 2>"$tmp/err"
  check cli_tensorize_run_needs_extern grep -q 'T.call_extern "tmm16": no --extern shared object defines it' "$tmp/err"
  "$IR" apply "$X/matmul.py" --trace "$X/tmm16_trace.json" --extern "$tmp/libtmm16.so" >/dev/null 2>&1
  check cli_tensorize_extern_needs_run_exit2 test $? -eq 2
else
  fail cli_tensorize_run_extern "cc -shared: $(head -c 200 "$tmp/err")"
fi

# Size vars: one build serves every size; the object and its header work
# from C at several sizes and refuse one past the bound.
K=tests/kernels/sym_attention.py
"$IR" run "$K" --size n=1,5,128 --repeat 1 --min-ms 1 >"$tmp/sym_run" 2>"$tmp/err"
check cli_size_run_exit test $? -eq 0
check cli_size_run_three_sizes test "$(grep -c 'max error' "$tmp/sym_run")" -eq 3
check cli_size_run_labels grep -q '^main \[n=128\]: max error' "$tmp/sym_run"
"$IR" run "$K" --size n=1,x >/dev/null 2>"$tmp/err"
check cli_size_bad_value_exit1 test $? -eq 1
check cli_size_bad_value_message grep -q "size n=1,x: expected integers" "$tmp/err"
"$IR" run "$K" --size m=3 >/dev/null 2>"$tmp/err"
check cli_size_unknown_var_exit1 test $? -eq 1
check cli_size_unknown_var_message grep -q "size m=3: no function has a size var named m" "$tmp/err"
"$IR" run "$K" --size n=129 >/dev/null 2>"$tmp/err"
check cli_size_outside_bound grep -q "size n = 129 is outside its bounds \[1, 128\]" "$tmp/err"
"$IR" run tests/golden/symbolic.py >/dev/null 2>"$tmp/err"
check cli_size_unbounded_needs_size grep -q "size batch has no declared max: give its values with --size batch=V" "$tmp/err"
"$IR" build "$K" -o "$tmp/attn.o" --header "$tmp/attn.h" --name attn 2>"$tmp/err"
check cli_size_build_exit test $? -eq 0
check cli_size_header_wrapper grep -q 'static inline int32_t attn_call(float \*q, float \*K, float \*V, float \*o, int64_t n)' "$tmp/attn.h"
cat >"$tmp/attn_main.c" <<'CEOF'
#include <math.h>
#include <stdio.h>
#include "attn.h"
static float q[64], K[4 * 128 * 16], V[4 * 128 * 16], o[64];
/* o = sum over t of (q . K[h, t]) * V[h, t], the cache laid out for n. */
static int check(int64_t n) {
  for (int i = 0; i < 64; i++) q[i] = (float)(i % 5) * 0.25f - 0.5f;
  for (int64_t i = 0; i < 4 * n * 16; i++) {
    K[i] = (float)(i % 7) * 0.125f - 0.375f;
    V[i] = (float)(i % 3) - 1.0f;
  }
  if (attn_call(q, K, V, o, n) != 0) return 1;
  for (int h = 0; h < 4; h++)
    for (int d = 0; d < 16; d++) {
      double want = 0;
      for (int64_t t = 0; t < n; t++) {
        double s = 0;
        for (int e = 0; e < 16; e++) s += q[h * 16 + e] * K[(h * n + t) * 16 + e];
        want += s * V[(h * n + t) * 16 + d];
      }
      if (fabs(o[h * 16 + d] - want) > 1e-3 * (1 + fabs(want))) return 2;
    }
  return 0;
}
int main(void) {
  int64_t ns[] = {1, 5, 77, 128};
  for (int i = 0; i < 4; i++)
    if (check(ns[i])) { printf("bad at n=%lld\n", (long long)ns[i]); return 1; }
  o[0] = 42;
  if (attn_call(q, K, V, o, 129) != -2 || attn_call(q, K, V, o, 0) != -2 || o[0] != 42) {
    printf("a size outside [1, 128] was not refused\n");
    return 1;
  }
  printf("ok\n");
  return 0;
}
CEOF
if ${CC:-cc} -std=gnu11 -O1 -I"$tmp" "$tmp/attn_main.c" "$tmp/attn.o" -I. targets/runtime/parallel.c \
    targets/runtime/workspace.c -lm -lpthread -o "$tmp/attn_prog" 2>"$tmp/err"; then
  "$tmp/attn_prog" >"$tmp/attn_out" 2>&1
  check cli_size_object_from_c grep -q '^ok$' "$tmp/attn_out"
else
  fail cli_size_object_from_c "cc: $(head -c 300 "$tmp/err")"
fi
