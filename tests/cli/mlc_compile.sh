#!/bin/sh
# mlc-compile end to end: the pass listing, --print-after output, untuned
# kernels listed, the MLP object + header linked into a C program that
# classifies like a plain C evaluation, --run, the CNN, --task, errors.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

"$MC" --help >"$tmp/help" 2>&1
check compile_help_exit test $? -eq 0
check compile_help_passes grep -q 'fuse_tir' "$tmp/help"

"$MC" >/dev/null 2>"$tmp/err"
check compile_no_args_exit2 test $? -eq 2
"$MC" --model examples/mlp.json --print-after bogus >/dev/null 2>"$tmp/err"
check compile_bad_pass_exit2 test $? -eq 2
check compile_bad_pass_msg grep -q "unknown pass 'bogus'" "$tmp/err"
"$MC" --task matmul >/dev/null 2>"$tmp/err"
check compile_task_needs_o test $? -eq 2

"$MC" --model examples/mlp.json --print-after fuse >"$tmp/fuse.txt" 2>"$tmp/err"
check compile_fuse_exit test $? -eq 0
check compile_fuse_sub0 grep -q 'def fused_matmul_add_relu0(x: R.Tensor((1, 784), dtype="float32")' "$tmp/fuse.txt"
check compile_fuse_sub1 grep -q 'def fused_matmul_add1(' "$tmp/fuse.txt"
check compile_fuse_primitive grep -q 'R.func_attr({"Primitive": 1})' "$tmp/fuse.txt"
check compile_fuse_call grep -q 'gv: R.Tensor((1, 10), dtype="float32") = cls.fused_matmul_add1(lv3, metadata\["lv4"\], metadata\["b1"\])' "$tmp/fuse.txt"
check compile_untuned grep -q 'mlp_fused_matmul_add1 .* untuned' "$tmp/err"

ok=0
for pass in load $(sed -n '/^passes, in order:/,/^$/p' "$tmp/help" | awk '/^  [a-z]/ {print $1}'); do
  "$MC" --model examples/mlp.json --print-after "$pass" --no-schedule >"$tmp/p.txt" 2>/dev/null &&
    grep -q "^# after pass $pass" "$tmp/p.txt" && grep -q '    def main(' "$tmp/p.txt" || ok=1
done
check compile_print_after_every_pass test $ok -eq 0

"$MC" --model examples/mlp.json --print-after fuse_tir >"$tmp/ft.txt" 2>/dev/null
check compile_fuse_tir_prim_func grep -q '@T.prim_func' "$tmp/ft.txt"
check compile_fuse_tir_intermediate grep -q 'C_intermediate = T.alloc_buffer((1, 128))' "$tmp/ft.txt"
check compile_fuse_tir_call grep -q 'R.call_tir(cls.fused_matmul_add_relu0, (x, metadata\["lv0"\], metadata\["b0"\])' "$tmp/ft.txt"

# The notes' MatmulAddFusor: matmul + add pairs only, relu on its own.
"$MC" --model examples/mlp.json --fuse-max-ops 2 --print-after fuse >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_exit test $? -eq 0
check compile_notes_fuse_sub0 grep -q 'def fused_matmul_add0(x: R.Tensor((1, 784), dtype="float32")' "$tmp/n.txt"
check compile_notes_fuse_sub1 grep -q 'def fused_matmul_add1(lv3: R.Tensor((1, 128), dtype="float32")' "$tmp/n.txt"
check compile_notes_fuse_relu grep -q '= R.nn.relu(lv2)' "$tmp/n.txt"
"$MC" --model examples/mlp.json --fuse-max-ops 2 --print-after fuse_tir >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_tir grep -q 'lv2 = R.call_tir(cls.fused_matmul_add0, (x, metadata\["lv0"\], metadata\["b0"\])' "$tmp/n.txt"
check compile_notes_fuse_tir_one_func test "$(grep -c 'def fused_matmul_add[01](.*T.Buffer' "$tmp/n.txt")" -eq 2
"$MC" --model examples/mlp.json --fuse-max-ops 2 --run >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_run_exit test $? -eq 0
check compile_notes_fuse_matches grep -q 'max abs error gv: [0-9.e-]* (against the plain C reference)' "$tmp/n.txt"
"$MC" --model examples/mlp.json --fuse-max-ops 0 >/dev/null 2>"$tmp/err"
check compile_fuse_max_ops_bad test $? -eq 2

"$MC" --model examples/mlp.json -o "$tmp/mlp.o" --header "$tmp/mlp.h" 2>"$tmp/err"
check compile_mlp_object test $? -eq 0 -a -s "$tmp/mlp.o" -a -s "$tmp/mlp.h"
cat >"$tmp/classify.c" <<'CEOF'
/* Links the compiled MLP; checks it against a plain evaluation of the
 * weights the header embeds (lv0 = w0^T, lv4 = w1^T after folding). */
#include "mlp.h"
#include <math.h>
#include <stdio.h>
int main(void) {
  unsigned s = 12345;
  int agree = 0, n = 50;
  double worst = 0;
  for (int t = 0; t < n; t++) {
    float x[784], y[10], h[128], want[10];
    for (int i = 0; i < 784; i++) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 8) % 1000) / 1000.0f; }
    if (mlp_run(x, y) != 0) return 1;
    for (int j = 0; j < 128; j++) {
      double a = mlp_w_b0[j];
      for (int k = 0; k < 784; k++) a += (double)x[k] * mlp_w_lv0[k * 128 + j];
      h[j] = a > 0 ? (float)a : 0;
    }
    int am = 0, bm = 0;
    for (int j = 0; j < 10; j++) {
      double a = mlp_w_b1[j];
      for (int k = 0; k < 128; k++) a += (double)h[k] * mlp_w_lv4[k * 10 + j];
      want[j] = (float)a;
      if (fabs(want[j] - y[j]) > worst) worst = fabs(want[j] - y[j]);
      if (y[j] > y[am]) am = j;
      if (want[j] > want[bm]) bm = j;
    }
    agree += am == bm;
  }
  printf("agree %d/%d max_err %g\n", agree, n, worst);
  return agree == n && worst < 1e-4 ? 0 : 1;
}
CEOF
# The runtime from source: $B/libmlcrt.a is sanitized in `make asan test`.
RT_SRC="-I. targets/runtime/parallel.c targets/runtime/half.c"
cc -std=gnu11 -O1 -I"$tmp" "$tmp/classify.c" "$tmp/mlp.o" $RT_SRC -fopenmp -lm -o "$tmp/classify" 2>"$tmp/cc_err"
check compile_header_links test $? -eq 0
"$tmp/classify" >"$tmp/cls.txt" 2>&1
check compile_linked_classifies test $? -eq 0

"$MC" --model examples/mlp.json --run --repeat 3 >"$tmp/run.txt" 2>"$tmp/err"
check compile_mlp_run test $? -eq 0
check compile_mlp_run_argmax grep -q '^argmax gv: ' "$tmp/run.txt"
check compile_mlp_run_error grep -q '^max abs error gv: ' "$tmp/run.txt"

"$MC" --model examples/cnn.json --run --repeat 3 >"$tmp/cnn.txt" 2>"$tmp/err"
check compile_cnn_run test $? -eq 0
check compile_cnn_fused grep -q 'cnn_fused_conv2d_add_relu0 .* untuned' "$tmp/err"

"$MC" --task matmul --shape 64,64,64 -o "$tmp/mm.o" --header "$tmp/mm.h" 2>"$tmp/err"
check compile_task_exit test $? -eq 0 -a -s "$tmp/mm.o"
check compile_task_untuned grep -q 'matmul .* untuned' "$tmp/err"

sed 's/"op": "relu"/"op": "rleu"/' examples/mlp.json >"$tmp/bad.json"
"$MC" --model "$tmp/bad.json" --weights examples/mlp >/dev/null 2>"$tmp/err"
check compile_bad_op_exit1 test $? -eq 1
check compile_bad_op_names_node grep -q "node 'lv3': unknown op \"rleu\"" "$tmp/err"
"$MC" --model examples/mlp.json --weights "$tmp/nowhere" >/dev/null 2>"$tmp/err"
check compile_missing_weights_exit1 test $? -eq 1
check compile_missing_weights_msg grep -q "weight 'w0'" "$tmp/err"

"$MC" --model examples/mlp.json --report --repeat 5 --db "$tmp/none.db" >"$tmp/rep.txt" 2>"$tmp/err"
check compile_report_exit test $? -eq 0
check compile_report_table grep -q '^mlp_fused_matmul_add1 .* untuned$' "$tmp/rep.txt"
check compile_missing_db_untuned grep -q 'mlp_fused_matmul_add1 .* untuned' "$tmp/err"
echo "not a database" >"$tmp/bad.db"
"$MC" --model examples/mlp.json --db "$tmp/bad.db" >/dev/null 2>"$tmp/err"
check compile_bad_db_exit1 test $? -eq 1
check compile_bad_db_msg grep -q 'mlc-compile: error:' "$tmp/err"

# The CNN's emitted entry (intermediates sharing the workspace) against the
# in-process run of the same kernels on the same input.
"$MC" --model examples/cnn.json -o "$tmp/cnn.o" --header "$tmp/cnn.h" 2>"$tmp/err"
check compile_cnn_object test $? -eq 0
cat >"$tmp/cnn_main.c" <<'CEOF'
#include "cnn.h"
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  static float x[3 * 16 * 16], y[10];
  unsigned s = 777;
  for (int i = 0; i < 3 * 16 * 16; i++) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f; }
  /* the input as .npy for mlc-compile --run --input */
  FILE *f = fopen(argv[1], "wb");
  char hdr[118];
  memset(hdr, ' ', sizeof hdr);
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 16, 16), }");
  hdr[n] = ' ';
  hdr[117] = '\n';
  fwrite("\x93NUMPY\x01\x00\x76\x00", 1, 10, f);
  fwrite(hdr, 1, sizeof hdr, f);
  fwrite(x, sizeof(float), 3 * 16 * 16, f);
  fclose(f);
  if (cnn_run(x, y) != 0) return 1;
  printf("output prob:");
  for (int i = 0; i < 10; i++) printf(" %.6g", y[i]);
  printf("\n");
  return 0;
}
CEOF
cc -std=gnu11 -O1 -I"$tmp" "$tmp/cnn_main.c" "$tmp/cnn.o" $RT_SRC -fopenmp -lm -o "$tmp/cnn_main" 2>"$tmp/cc_err"
check compile_cnn_header_links test $? -eq 0
"$tmp/cnn_main" "$tmp/x.npy" >"$tmp/cnn_linked.txt"
check compile_cnn_linked_runs test $? -eq 0
"$MC" --model examples/cnn.json --repeat 1 --run "$tmp/x.npy" 2>/dev/null | grep '^output prob:' >"$tmp/cnn_inproc.txt"
check compile_cnn_linked_equals_run cmp -s "$tmp/cnn_linked.txt" "$tmp/cnn_inproc.txt"

# Replay: dump the MLP's kernels as task files, tune one briefly, compile
# again: that kernel replays its record, the other stays untuned, and the
# model still matches the reference (--report exits 1 on a mismatch).
"$MC" --model examples/mlp.json --dump-tasks "$tmp" >/dev/null 2>"$tmp/err"
check compile_dump_tasks test -s "$tmp/mlp_fused_matmul_add1.py"
check compile_dump_tasks_main grep -q '^def main(' "$tmp/mlp_fused_matmul_add1.py"
if [ -x "${MLC_TUNE:-$B/bin/mlc-tune}" ]; then
  "${MLC_TUNE:-$B/bin/mlc-tune}" --task-file "$tmp/mlp_fused_matmul_add1.py" --trials 2 \
    --trials-per-round 2 --no-baseline -j 1 --db "$tmp/t.db" >/dev/null 2>&1
  check compile_replay_tuned test $? -eq 0
  "$MC" --model examples/mlp.json --db "$tmp/t.db" --report --repeat 3 >"$tmp/rep2.txt" 2>"$tmp/err"
  check compile_replay_exit test $? -eq 0
  check compile_replay_record grep -q 'mlp_fused_matmul_add1 .* record [0-9]' "$tmp/err"
  check compile_replay_other_untuned grep -q 'mlp_fused_matmul_add_relu0 .* untuned' "$tmp/err"
  check compile_replay_report grep -q '^mlp_fused_matmul_add1 .* record [0-9]*$' "$tmp/rep2.txt"
else
  echo "SKIP compile_replay: no mlc-tune"
fi

# Model tuning: mlc-tune --model shares a small budget over the MLP's two
# kernels (progress line per round), then every kernel replays a record and
# the model still matches its reference; a rerun has nothing to do.
TUNE=${MLC_TUNE:-$B/bin/mlc-tune}
if [ -x "$TUNE" ]; then
  "$TUNE" --model examples/mlp.json --task >/dev/null 2>"$tmp/err"
  check tune_model_and_task_exit2 test $? -eq 2
  "$TUNE" --model examples/mlp.json --task-scheduler bogus >/dev/null 2>"$tmp/err"
  check tune_model_bad_scheduler_exit2 test $? -eq 2
  "$TUNE" --model "$tmp/bad.json" --weights examples/mlp --db "$tmp/m.db" >/dev/null 2>"$tmp/err"
  check tune_model_bad_model_exit1 test $? -eq 1
  check tune_model_bad_model_msg grep -q "node 'lv3': unknown op" "$tmp/err"
  "$TUNE" --model examples/mlp.json --trials 6 --trials-per-round 2 -j 1 -v --db "$tmp/m.db" \
    >"$tmp/mt.txt" 2>"$tmp/mt_err"
  rc=$?
  check tune_model_exit test $rc -eq 0
  [ $rc -eq 0 ] || tail -n 5 "$tmp/mt_err"
  check tune_model_progress grep -q '^round 1: task 1/2 mlp_fused_matmul_add_relu0 (calls 1): 2 trials' "$tmp/mt_err"
  check tune_model_progress_est grep -q '^round 3: .*model 6/6 trials, est. latency [0-9.e+]* us' "$tmp/mt_err"
  check tune_model_summary grep -q '^  mlp_fused_matmul_add1 *1 *[0-9]' "$tmp/mt.txt"
  check tune_model_total grep -q '^trials: 0 before, 6 measured now' "$tmp/mt.txt"
  "$MC" --model examples/mlp.json --db "$tmp/m.db" --report --repeat 3 >"$tmp/rep3.txt" 2>"$tmp/err"
  check tune_model_compile_exit test $? -eq 0
  check tune_model_all_replayed test "$(grep -c '^mlp_.* record [0-9]*$' "$tmp/rep3.txt")" -eq 2
  check tune_model_none_untuned test "$(grep -c 'untuned' "$tmp/err")" -eq 0
  "$TUNE" --model examples/mlp.json --trials 6 --db "$tmp/m.db" >"$tmp/mt2.txt" 2>"$tmp/err"
  check tune_model_rerun_nothing test $? -eq 0
  check tune_model_rerun_msg grep -q 'nothing to do' "$tmp/err"
else
  echo "SKIP tune_model: no mlc-tune"
fi

# Every kernel of the CNN, dumped as TVMScript, parses, verifies and
# reprints byte for byte (mlc-ir check).
mkdir -p "$tmp/cnn_tasks"
"$MC" --model examples/cnn.json --dump-tasks "$tmp/cnn_tasks" >/dev/null 2>"$tmp/err"
check compile_cnn_dump_tasks test $? -eq 0
IR=${MLC_IR:-$B/bin/mlc-ir}
if [ -x "$IR" ]; then
  rt=0
  for f in "$tmp"/cnn_tasks/*.py; do
    "$IR" check "$f" >"$f.2" 2>>"$tmp/err" && cmp -s "$f" "$f.2" || { rt=1; echo "    $f" >>"$tmp/err"; }
  done
  check compile_cnn_tasks_roundtrip test $rt -eq 0
else
  echo "SKIP compile_cnn_tasks_roundtrip: no mlc-ir"
fi
