#!/bin/sh
# Library offload end to end (mlc-tune --library openblas): the library
# candidate is measured and recorded like any other (mlc-db top names it,
# mlc-db show prints its library_call), counts as a trial and is measured
# once; mlc-compile replays whichever record is best and says which it
# chose and why (both times); an object that calls the library links with
# libmlcrt and computes the product (checked against plain C); a model's
# --report names the choice per kernel; refusals: an unknown library
# (exit 2), a library that cannot be opened (exit 1), a kernel with no
# matmul (a note, exit 0); without --library no library record appears.
B=${MLC_BUILD:-build}
TUNE=$B/bin/mlc-tune
DB=$B/bin/mlc-db
MC=$B/bin/mlc-compile
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4"

# the issue's run: a small matmul, 4 trials, the library among them
"$TUNE" --task matmul --shape 64,64,64 --trials 4 --library openblas --db "$tmp/a.db" $Q \
  >"$tmp/out" 2>"$tmp/err"
check lib_tune_exit test $? -eq 0
check lib_tune_threads grep -q 'library openblas: cblas_sgemm runs on [0-9]* threads, as the tuned kernels (MLC_NUM_THREADS=[0-9]*), with its [A-Za-z0-9]* kernels' "$tmp/err"
check lib_tune_trials grep -q 'trials: 0 before, 4 measured now (0 errors)' "$tmp/out"
check lib_tune_choice grep -Eq '^library openblas [0-9.e-]+ ms \(record [0-9]+\) vs tuned [0-9.e-]+ ms \(record [0-9]+\): the (library|tuned kernel) is faster' "$tmp/out"

"$DB" --db "$tmp/a.db" top --task matmul -k 10 >"$tmp/top" 2>&1
check lib_db_top_names_library grep -q ' ok .* library openblas$' "$tmp/top"
check lib_db_top_one_library test "$(grep -c 'library openblas' "$tmp/top")" -eq 1
check lib_db_top_all_four test "$(grep -c ' ok ' "$tmp/top")" -eq 4
lib_id=$(grep 'library openblas' "$tmp/top" | awk '{print $2}')
"$DB" --db "$tmp/a.db" show "$lib_id" >"$tmp/show" 2>&1
check lib_db_show_trace grep -q 'sch.library_call(block=b0, library="openblas")' "$tmp/show"
"$DB" --db "$tmp/a.db" top --task matmul -k 10 --json >"$tmp/top.json" 2>&1
check lib_db_top_json grep -q '"library":"openblas"' "$tmp/top.json"

# mlc-compile names the choice with both times
"$MC" --task matmul --shape 64,64,64 --db "$tmp/a.db" -o "$tmp/mm.o" 2>"$tmp/err"
check lib_compile_exit test $? -eq 0
check lib_compile_names_choice grep -Eq 'matmul .* record [0-9]+ \([0-9.]+ us\): (library openblas \([0-9.e-]+ ms\) vs tuned \([0-9.e-]+ ms\)|tuned \([0-9.e-]+ ms\) vs library openblas \([0-9.e-]+ ms\))$' "$tmp/err"

# a budget of one trial: the library record is the only one, hence the best
"$TUNE" --task matmul --shape 48,40,24 --trials 1 --library openblas --db "$tmp/b.db" $Q \
  >"$tmp/out" 2>"$tmp/err"
check lib_only_exit test $? -eq 0
check lib_only_chosen grep -q 'vs tuned - (none measured): the library is chosen' "$tmp/out"
# a rerun with a larger budget tunes on and does not measure the library again
"$TUNE" --task matmul --shape 48,40,24 --trials 3 --library openblas --db "$tmp/b.db" $Q \
  >"$tmp/out2" 2>"$tmp/err2"
check lib_resume_exit test $? -eq 0
check lib_resume_trials grep -q 'trials: 1 before, 2 measured now' "$tmp/out2"
"$DB" --db "$tmp/b.db" top --task matmul -k 10 >"$tmp/top" 2>&1
check lib_resume_one_library test "$(grep -c 'library openblas' "$tmp/top")" -eq 1
# compile the library record (the 1-trial database's choice) and link it
"$TUNE" --task matmul --shape 48,40,24 --trials 1 --library openblas --db "$tmp/c.db" $Q \
  >/dev/null 2>&1
"$MC" --task matmul --shape 48,40,24 --db "$tmp/c.db" -o "$tmp/lib.o" --header "$tmp/lib.h" \
  2>"$tmp/err"
check lib_compile_library_chosen grep -q 'record [0-9]* (.*): library openblas (.* ms) vs tuned (none measured)' "$tmp/err"
check lib_compile_link_line grep -q 'matmul call openblas: link with libmlcrt.a -ldl' "$tmp/err"
check lib_header_comment grep -q 'Library calls: matmul call openblas (cblas_sgemm)' "$tmp/lib.h"
cat >"$tmp/main.c" <<'CEOF'
#include "lib.h"
#include <math.h>
#include <stdio.h>
int main(void) {
  static float A[48 * 24], Bm[24 * 40], C[48 * 40];
  for (int i = 0; i < 48 * 24; i++) A[i] = (float)((i * 7) % 13) / 13 - 0.5f;
  for (int i = 0; i < 24 * 40; i++) Bm[i] = (float)((i * 5) % 11) / 11 - 0.5f;
  for (int i = 0; i < 48 * 40; i++) C[i] = 99; /* the kernel must overwrite */
  if (matmul_call(A, Bm, C) != 0) return 2;
  double worst = 0;
  for (int i = 0; i < 48; i++)
    for (int j = 0; j < 40; j++) {
      double s = 0;
      for (int k = 0; k < 24; k++) s += (double)A[i * 24 + k] * Bm[k * 40 + j];
      double d = fabs(s - C[i * 40 + j]);
      if (!(d <= worst)) worst = d; /* NaN sticks */
    }
  printf("max_err %g\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
CEOF
RT_SRC="-I. targets/runtime/parallel.c targets/runtime/workspace.c targets/runtime/half.c targets/runtime/blas.c"
cc -std=gnu11 -O1 -I"$tmp" "$tmp/main.c" "$tmp/lib.o" $RT_SRC -fopenmp -lm -ldl -o "$tmp/main" \
  2>"$tmp/cc_err"
check lib_object_links test $? -eq 0
"$tmp/main" >"$tmp/main.out" 2>&1
check lib_object_computes test $? -eq 0
# the same program with OpenBLAS unavailable: NaN, so the check fails
MLC_BLAS_LIBRARY=/nonexistent/libopenblas.so "$tmp/main" >"$tmp/main.out" 2>&1
check lib_object_without_openblas_fails test $? -eq 1

# --json carries the library's time, or why there is none
"$TUNE" --task matmul --shape 32,32,32 --trials 2 --library openblas --db "$tmp/j.db" --json $Q \
  >"$tmp/out" 2>"$tmp/err"
check lib_json_exit test $? -eq 0
check lib_json_time grep -Eq '"library_sec":[0-9.e-]+,"library_error":"","library_note":""' "$tmp/out"
check lib_json_not_zero test "$(grep -c '"library_sec":0,' "$tmp/out")" -eq 0

# refusals
"$TUNE" --task matmul --shape 16,16,16 --trials 2 --library mkl --db "$tmp/x.db" $Q \
  >/dev/null 2>"$tmp/err"
check lib_unknown_exit2 test $? -eq 2
check lib_unknown_msg grep -q "mlc-tune: error: --library wants openblas, got 'mkl'" "$tmp/err"
MLC_BLAS_LIBRARY=/nonexistent/libopenblas.so "$TUNE" --task matmul --shape 16,16,16 --trials 2 \
  --library openblas --db "$tmp/x.db" $Q >/dev/null 2>"$tmp/err"
check lib_missing_exit1 test $? -eq 1
check lib_missing_msg grep -q 'mlc-tune: error: --library openblas: cannot open /nonexistent/libopenblas.so' "$tmp/err"
check lib_missing_no_db test ! -e "$tmp/x.db"
"$TUNE" --task vecadd --shape 64 --trials 2 --library openblas --db "$tmp/v.db" $Q \
  >"$tmp/out" 2>"$tmp/err"
check lib_not_applicable_exit test $? -eq 0
check lib_not_applicable_note grep -q '^library openblas: not applicable: library_call: b0 (block C) with openblas: ' "$tmp/out"
check lib_not_applicable_trials grep -q 'trials: 0 before, 2 measured now' "$tmp/out"

# without --library nothing changes: no library record
"$TUNE" --task matmul --shape 16,16,16 --trials 2 --db "$tmp/d.db" $Q >"$tmp/out" 2>"$tmp/err"
check lib_off_exit test $? -eq 0
"$DB" --db "$tmp/d.db" top --task matmul -k 10 >"$tmp/top" 2>&1
check lib_off_no_library_record test "$(grep -c 'library' "$tmp/top")" -eq 0
check lib_off_no_summary_line test "$(grep -c '^library' "$tmp/out")" -eq 0

# a model: the matmul layer gets a library record, the first layer (a
# dense over the weight the layout pass packed) none; --report names the
# choice (round-robin: two trials each, the library's and the default schedule's)
"$TUNE" --model examples/mlp.json --trials 4 --trials-per-round 2 --library openblas \
  --task-scheduler round-robin --db "$tmp/m.db" --cost-model random -j 1 >"$tmp/out" 2>"$tmp/err"
check lib_model_exit test $? -eq 0
check lib_model_summary test "$(grep -Ec '^  mlp_fused_matmul_add1 +library openblas .* vs tuned ' "$tmp/out")" -eq 1
check lib_model_packed_none grep -q '^  (1 other kernels: no library record: .*packed' "$tmp/out"
"$MC" --model examples/mlp.json --db "$tmp/m.db" --report --repeat 3 >"$tmp/rep" 2>"$tmp/err"
check lib_model_report_exit test $? -eq 0
check lib_model_report_names test "$(grep -Ec '^mlp_fused_matmul_add1 .* record [0-9]+: (library openblas \(.* ms\) vs tuned \(.* ms\)|tuned \(.* ms\) vs library openblas \(.* ms\))$' "$tmp/rep")" -eq 1
