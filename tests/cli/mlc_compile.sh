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
check compile_fuse_sub0 grep -q 'def fused_dense_add_relu0(x: R.Tensor((1, 784), dtype="float32")' "$tmp/fuse.txt"
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
check compile_fuse_tir_intermediate grep -q 'T_dense_intermediate = T.alloc_buffer((1, 128))' "$tmp/ft.txt"
check compile_fuse_tir_call grep -q 'R.call_tir(cls.fused_dense_add_relu0, (x, metadata\["lv0_packed"\], metadata\["b0"\])' "$tmp/ft.txt"

# The notes' MatmulAddFusor: matmul + add pairs only, relu on its own (the
# first layer's matmul is a dense over its packed weight after layout).
"$MC" --model examples/mlp.json --fuse-max-ops 2 --print-after fuse >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_exit test $? -eq 0
check compile_notes_fuse_sub0 grep -q 'def fused_dense_add0(x: R.Tensor((1, 784), dtype="float32")' "$tmp/n.txt"
check compile_notes_fuse_sub1 grep -q 'def fused_matmul_add1(lv3: R.Tensor((1, 128), dtype="float32")' "$tmp/n.txt"
check compile_notes_fuse_relu grep -q '= R.nn.relu(lv2)' "$tmp/n.txt"
"$MC" --model examples/mlp.json --fuse-max-ops 2 --print-after fuse_tir >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_tir grep -q 'lv2 = R.call_tir(cls.fused_dense_add0, (x, metadata\["lv0_packed"\], metadata\["b0"\])' "$tmp/n.txt"
check compile_notes_fuse_tir_one_func test "$(grep -c 'def fused_\(dense_add0\|matmul_add1\)(.*T.Buffer' "$tmp/n.txt")" -eq 2
"$MC" --model examples/mlp.json --fuse-max-ops 2 --run >"$tmp/n.txt" 2>/dev/null
check compile_notes_fuse_run_exit test $? -eq 0
check compile_notes_fuse_matches grep -q 'max abs error gv: [0-9.e-]* (against the plain C reference)' "$tmp/n.txt"
"$MC" --model examples/mlp.json --fuse-max-ops 0 >/dev/null 2>"$tmp/err"
check compile_fuse_max_ops_bad test $? -eq 2

"$MC" --model examples/mlp.json -o "$tmp/mlp.o" --header "$tmp/mlp.h" 2>"$tmp/err"
check compile_mlp_object test $? -eq 0 -a -s "$tmp/mlp.o" -a -s "$tmp/mlp.h"
cat >"$tmp/classify.c" <<'CEOF'
/* Links the compiled MLP; checks it against a plain evaluation of the
 * weights the header embeds (lv0 = w0^T, lv4 = w1^T after folding; lv0 packed by the layout pass
 * as [8][784][16] blocks of 16 columns). */
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
      for (int k = 0; k < 784; k++) a += (double)x[k] * mlp_w_lv0_packed[((j / 16) * 784 + k) * 16 + j % 16];
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
RT_SRC="-I. targets/runtime/parallel.c targets/runtime/workspace.c targets/runtime/half.c"
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
  check compile_replay_other_untuned grep -q 'mlp_fused_dense_add_relu0 .* untuned' "$tmp/err"
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
  # the warm-up measures each task's default schedule (a trial each), then rounds of 2
  check tune_model_progress grep -q '^round 1: task 1/2 mlp_fused_dense_add_relu0 (calls 1): 1 trials' "$tmp/mt_err"
  check tune_model_progress_est grep -q '^round 4: .*model 6/6 trials, est. latency [0-9.e+]* us' "$tmp/mt_err"
  check tune_model_summary grep -q '^  mlp_fused_matmul_add1 *1 *[0-9]' "$tmp/mt.txt"
  check tune_model_untuned_estimate grep -Eq '^the same with every kernel.s default schedule \(an untuned build\): [0-9.]+ us \([0-9.]+x\)$' "$tmp/mt.txt"
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

# ONNX models (tests/onnx/, written by tests/onnx/make_models.py with their
# inputs and numpy-computed outputs): run, outputs written as .npy and
# compared with numpy's; the same model linked from -o/--header.
cat >"$tmp/npycmp.c" <<'CEOF'
/* npycmp A.npy B.npy [ATOL]: float32 .npy files of equal size agree within
 * rtol 1e-4 (atol 1e-6, or ATOL); prints the max abs and relative error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static float *load(const char *p, long *n) {
  FILE *f = fopen(p, "rb");
  unsigned char h[10];
  if (!f || fread(h, 1, 10, f) != 10 || memcmp(h, "\x93NUMPY", 6)) return NULL;
  long hl = h[8] | h[9] << 8;
  fseek(f, 0, SEEK_END);
  long total = ftell(f) - 10 - hl;
  fseek(f, 10 + hl, SEEK_SET);
  *n = total / 4;
  float *d = malloc((size_t)total + 4);
  if (fread(d, 4, (size_t)*n, f) != (size_t)*n) return NULL;
  fclose(f);
  return d;
}
int main(int argc, char **argv) {
  long na, nb;
  double atol = argc > 3 ? atof(argv[3]) : 1e-6;
  float *a = load(argv[1], &na), *b = load(argv[2], &nb);
  if (!a || !b || na != nb) { printf("size mismatch\n"); return 1; }
  double abs_err = 0, rel = 0;
  int bad = 0;
  for (long i = 0; i < na; i++) {
    double e = fabs((double)a[i] - b[i]);
    if (e > abs_err) abs_err = e;
    if (e / (fabs(b[i]) + 1e-30) > rel && fabs(b[i]) > 1e-6) rel = e / fabs(b[i]);
    if (e > atol + 1e-4 * fabs(b[i])) bad++;
  }
  printf("max abs error %.3g, max rel error %.3g\n", abs_err, rel);
  return bad != 0;
}
CEOF
cc -std=gnu11 -O1 "$tmp/npycmp.c" -lm -o "$tmp/npycmp" 2>"$tmp/cc_err"
O=tests/onnx
"$MC" --model $O/tiny_cnn.onnx --run $O/tiny_cnn_input.npy --run-output "$tmp/cnn_y.npy" --repeat 1 \
  >"$tmp/o.txt" 2>"$tmp/err"
check onnx_cnn_run test $? -eq 0
check onnx_cnn_run_output_written test -s "$tmp/cnn_y.npy"
check onnx_cnn_matches_numpy "$tmp/npycmp" "$tmp/cnn_y.npy" $O/tiny_cnn_output.npy
check onnx_cnn_conv_fused grep -q 'tiny_cnn_fused_conv2d_.*relu0 ' "$tmp/err"
# a QDQ model (tests/onnx/make_models.py tiny_qdq): within one output step
# (0.1) of numpy's, the check against our reference the quantized one
"$MC" --model $O/tiny_qdq.onnx --run $O/tiny_qdq_input.npy --run-output "$tmp/qdq_y.npy" --repeat 1 \
  >"$tmp/o.txt" 2>"$tmp/err"
check onnx_qdq_run test $? -eq 0
check onnx_qdq_matches_numpy "$tmp/npycmp" "$tmp/qdq_y.npy" $O/tiny_qdq_output.npy 0.1001
check onnx_qdq_check_quantized grep -q 'quantized: within 1/16' "$tmp/o.txt"
# a QDQ dense layer (tiny_qdq_dense): computed on the integers (qdense), the
# quantize-again around its reshape dropped, equal to ONNX Runtime's
# arithmetic in numpy
"$MC" --model $O/tiny_qdq_dense.onnx --print-after quantize --no-schedule >"$tmp/o.txt" 2>/dev/null
check onnx_qdq_dense_integers grep -q 'R.qdense(' "$tmp/o.txt"
check onnx_qdq_dense_no_float_matmul test "$(grep -c 'R.matmul(' "$tmp/o.txt")" -eq 0
check onnx_qdq_dense_requantize_dropped test "$(grep -c 'R.quantize(' "$tmp/o.txt")" -eq 2
"$MC" --model $O/tiny_qdq_dense.onnx --run $O/tiny_qdq_dense_input.npy --run-output "$tmp/qdd_y.npy" \
  --repeat 1 >"$tmp/o.txt" 2>"$tmp/err"
check onnx_qdq_dense_run test $? -eq 0
check onnx_qdq_dense_matches_numpy "$tmp/npycmp" "$tmp/qdd_y.npy" $O/tiny_qdq_dense_output.npy 0.0201
# int8 activations (tiny_qdq_dense_s8, ONNX Runtime's default type): on
# their uint8 twin, equal to numpy's
"$MC" --model $O/tiny_qdq_dense_s8.onnx --print-after quantize --no-schedule >"$tmp/o.txt" 2>/dev/null
check onnx_qdq_dense_s8_integers grep -q 'R.qdense(' "$tmp/o.txt"
"$MC" --model $O/tiny_qdq_dense_s8.onnx --run $O/tiny_qdq_dense_s8_input.npy --run-output "$tmp/qds_y.npy" \
  --repeat 1 >"$tmp/o.txt" 2>"$tmp/err"
check onnx_qdq_dense_s8_run test $? -eq 0
check onnx_qdq_dense_s8_matches_numpy "$tmp/npycmp" "$tmp/qds_y.npy" $O/tiny_qdq_dense_s8_output.npy 0.0201
# a QDQ convolution (tiny_qdq_conv): padded with the zero point, im2col,
# qdense; equal to that arithmetic in numpy (and to ONNX Runtime's)
"$MC" --model $O/tiny_qdq_conv.onnx --print-after quantize --no-schedule >"$tmp/o.txt" 2>/dev/null
check onnx_qdq_conv_integers grep -q 'R.im2col(.*kernel=\[3, 3\], strides=\[2, 2\]' "$tmp/o.txt"
check onnx_qdq_conv_no_float_conv test "$(grep -c 'R.nn.conv2d(' "$tmp/o.txt")" -eq 0
"$MC" --model $O/tiny_qdq_conv.onnx --run $O/tiny_qdq_conv_input.npy --run-output "$tmp/qdc_y.npy" \
  --repeat 1 >"$tmp/o.txt" 2>"$tmp/err"
check onnx_qdq_conv_run test $? -eq 0
check onnx_qdq_conv_matches_numpy "$tmp/npycmp" "$tmp/qdc_y.npy" $O/tiny_qdq_conv_output.npy 0.0301
"$MC" --model $O/tiny_cnn.onnx --print-after load --no-schedule >"$tmp/o.txt" 2>/dev/null
check onnx_cnn_load_idents grep -q 'def main(input_1: R.Tensor((1, 3, 8, 8), dtype="float32"))' "$tmp/o.txt"
check onnx_cnn_shape_folded grep -q '= R.reshape(pool_MaxPool_output_0, (1, 64))' "$tmp/o.txt"
"$MC" --model $O/tiny_cnn.onnx --report --repeat 2 --db "$tmp/none.db" >"$tmp/o.txt" 2>/dev/null
check onnx_cnn_report grep -q '^tiny_cnn_softmax .* untuned$' "$tmp/o.txt"
"$MC" --model $O/tiny_cnn.onnx -o "$tmp/tc.o" --header "$tmp/tiny_cnn.h" 2>"$tmp/err"
check onnx_cnn_object test $? -eq 0 -a -s "$tmp/tc.o" -a -s "$tmp/tiny_cnn.h"
cat >"$tmp/tc_main.c" <<'CEOF'
/* The linked tiny CNN on the test input, its output as .npy. */
#include "tiny_cnn.h"
#include <stdio.h>
int main(int argc, char **argv) {
  static float x[3 * 8 * 8], y[5];
  FILE *f = fopen(argv[1], "rb");
  unsigned char h[10];
  if (!f || fread(h, 1, 10, f) != 10) return 1;
  fseek(f, 10 + (h[8] | h[9] << 8), SEEK_SET);
  if (fread(x, sizeof(float), 3 * 8 * 8, f) != 3 * 8 * 8) return 1;
  fclose(f);
  if (tiny_cnn_run(x, y) != 0) return 1;
  f = fopen(argv[2], "wb");
  char hdr[118];
  memset(hdr, ' ', sizeof hdr);
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), }");
  hdr[n] = ' ';
  hdr[117] = '\n';
  fwrite("\x93NUMPY\x01\x00\x76\x00", 1, 10, f);
  fwrite(hdr, 1, sizeof hdr, f);
  fwrite(y, sizeof(float), 5, f);
  return fclose(f) != 0;
}
CEOF
cc -std=gnu11 -O1 -include string.h -I"$tmp" "$tmp/tc_main.c" "$tmp/tc.o" $RT_SRC -fopenmp -lm -o "$tmp/tc_main" 2>"$tmp/cc_err"
check onnx_cnn_header_links test $? -eq 0
"$tmp/tc_main" $O/tiny_cnn_input.npy "$tmp/tc_y.npy"
check onnx_cnn_linked_runs test $? -eq 0
check onnx_cnn_linked_matches_numpy "$tmp/npycmp" "$tmp/tc_y.npy" $O/tiny_cnn_output.npy

# A one-layer transformer encoder as torch.onnx.export writes it (made by
# tests/onnx/make_encoder.py): MatMul, Gemm, Softmax, the LayerNorm
# pattern and shape arithmetic; the output matches PyTorch's.
"$MC" --model $O/tiny_encoder.onnx --run $O/tiny_encoder_input.npy --run-output "$tmp/enc_y.npy" \
  --repeat 1 >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then pass onnx_encoder_run; else fail onnx_encoder_run "exit $rc: $(head -c 300 "$tmp/err" | tr '\n' ' ')"; fi
check onnx_encoder_matches_pytorch "$tmp/npycmp" "$tmp/enc_y.npy" $O/tiny_encoder_output.npy
# Softplus, Elu and Softsign over |x| up to 200 (numpy's stable forms as
# the reference): no inf where the value is finite.
"$MC" --model $O/activations_wide.onnx --run $O/activations_wide_input.npy \
  --run-output "$tmp/act_y.npy" --repeat 1 >/dev/null 2>"$tmp/err"
check onnx_activations_wide_run test $? -eq 0
check onnx_activations_wide_match "$tmp/npycmp" "$tmp/act_y.npy" $O/activations_wide_output.npy

# A symbolic batch dimension: refused without --input-shape, then run.
"$MC" --model $O/mlp_sym.onnx -o "$tmp/sym.o" >/dev/null 2>"$tmp/err"
check onnx_symbolic_exit1 test $? -eq 1 -a ! -e "$tmp/sym.o"
check onnx_symbolic_msg grep -q "input 'x' has a symbolic dimension 0 (N); give its shape with --input-shape" "$tmp/err"
"$MC" --model $O/mlp_sym.onnx --input-shape x=2,4 --run --input x=$O/mlp_sym_input.npy \
  --run-output y="$tmp/sym_y.npy" --repeat 1 >/dev/null 2>"$tmp/err"
check onnx_input_shape_run test $? -eq 0
check onnx_input_shape_matches_numpy "$tmp/npycmp" "$tmp/sym_y.npy" $O/mlp_sym_output.npy
"$MC" --model $O/mlp_sym.onnx --input-shape x=3,4 --run $O/mlp_sym_input.npy -o "$tmp/sym.o" \
  >/dev/null 2>"$tmp/err"
check onnx_wrong_npy_exit1 test $? -eq 1 -a ! -e "$tmp/sym.o"
check onnx_wrong_npy_msg grep -q 'float32 (2, 4) does not match the model input x: float32 (3, 4)' "$tmp/err"
"$MC" --model $O/mlp_sym.onnx --input-shape x=2,4 --run --input z=$O/mlp_sym_input.npy >/dev/null 2>"$tmp/err"
check onnx_input_unknown_name test $? -eq 1
"$MC" --model $O/mlp_sym.onnx --weights "$tmp" >/dev/null 2>"$tmp/err"
check onnx_weights_usage_exit2 test $? -eq 2

# Bad models: each a clear message naming the node or tensor, exit 1,
# nothing written.
bad() { # name, file, expected message
  rm -f "$tmp/bad.o" "$tmp/bad.h"
  "$MC" --model "$2" -o "$tmp/bad.o" --header "$tmp/bad.h" >/dev/null 2>"$tmp/err"
  rc=$?
  check "onnx_bad_${1}_exit1" test $rc -eq 1 -a ! -e "$tmp/bad.o" -a ! -e "$tmp/bad.h"
  check "onnx_bad_${1}_msg" grep -qF "$3" "$tmp/err"
}
bad unknown_op $O/bad_unknown_op.onnx 'bad_unknown_op.onnx: node "/layer1/Foo" (op Foo, opset 13): not supported (supported: Abs, Acos, Acosh, Add,'
bad attribute $O/bad_attribute.onnx 'node "/act/LeakyRelu" (op LeakyRelu, opset 13): attribute "gamma" is not supported'
bad missing_init $O/bad_missing_init.onnx "node \"/add/Add\" (op Add, opset 13): input 'bias' is not a graph input, an initializer"
bad dtype $O/bad_dtype.onnx "input 'x' has dtype float64; inputs may be float32, int64, int32, bool, uint8, int8"
bad init_dtype $O/bad_init_dtype.onnx "initializer 'w': dtype float16 is not supported"
bad cycle $O/bad_cycle.onnx 'is part of a cycle: "second" -> "first" -> "second"'
bad quant_scale $O/bad_quant_scale.onnx 'node "q" (op QuantizeLinear, opset 13): input 1 has 3 values for axis 1 of extent 4 (blocked quantization is not supported)'
bad quant_block $O/bad_quant_block.onnx 'node "q" (op QuantizeLinear, opset 13): block_size 2: blocked quantization is not supported'
bad quant_float $O/bad_quant_float.onnx 'node "dq" (op DequantizeLinear, opset 13): the input is float32; uint8, int8 or int32 supported'
head -c 200 $O/tiny_cnn.onnx >"$tmp/trunc.onnx"
bad truncated "$tmp/trunc.onnx" 'trunc.onnx: not an ONNX model (the protobuf does not parse'
echo "not a model" >"$tmp/text.onnx"
bad not_protobuf "$tmp/text.onnx" 'text.onnx: not an ONNX model'
bad missing_file "$tmp/nowhere.onnx" 'nowhere.onnx'

# Records are untrusted: a row tampered in the database (its trace edited
# with SQL to another split, its time made the best) replays to another
# function than the hash it was stored with, so mlc-compile skips it with a
# warning naming it and compiles the next best; --verify runs each
# replayed kernel against the unscheduled one before writing anything.
MDB=$B/bin/mlc-db
"$B/bin/mlc-ir" print --task matmul --shape 16,16,16 >"$tmp/mm16.py"
W16=$(awk 'BEGIN { ORS = "" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print $0 "\\n" }' "$tmp/mm16.py")
split_trace() {
  printf '{"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l2",null,%s],{"preserve_unit_iters":true},["l4","l5"]]],"decisions":{},"version":1}' "$1"
}
for f in 8 4; do
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[%se-06],"error":null}\n' "$W16" "$(split_trace $f)" "$f"
done >"$tmp/rec.jsonl"
"$MDB" --db "$tmp/rec.db" import "$tmp/rec.jsonl" >/dev/null 2>"$tmp/err"
check compile_untrusted_import test $? -eq 0
"$MC" --task matmul --shape 16,16,16 --db "$tmp/rec.db" -o "$tmp/r.o" --verify 2>"$tmp/err"
check compile_untrusted_clean_exit test $? -eq 0
check compile_untrusted_clean_best grep -q 'record 2 ' "$tmp/err"
check compile_untrusted_clean_no_warning test "$(grep -c warning "$tmp/err")" -eq 0
check compile_verify_ok grep -q 'verified 1 replayed kernel against the unscheduled ones (seed 1)' "$tmp/err"
if command -v sqlite3 >/dev/null 2>&1; then
  sqlite3 "$tmp/rec.db" "UPDATE records SET trace = replace(trace, ',4]', ',2]'), mean_sec = 1e-09, run_secs = '[1e-09]' WHERE id = 2"
  rm -f "$tmp/r.o"
  "$MC" --task matmul --shape 16,16,16 --db "$tmp/rec.db" -o "$tmp/r.o" 2>"$tmp/err"
  check compile_tampered_exit test $? -eq 0 -a -s "$tmp/r.o"
  check compile_tampered_warning grep -q '^mlc-compile: warning: matmul: record 2 skipped: its trace replays to a function with hash [0-9a-f]*, the record says' "$tmp/err"
  check compile_tampered_next_best grep -q 'matmul .* record 1 ' "$tmp/err"
  # A row written around the API with a negative time is never chosen.
  sqlite3 "$tmp/rec.db" "UPDATE records SET mean_sec = -1 WHERE id = 1"
  "$MC" --task matmul --shape 16,16,16 --db "$tmp/rec.db" -o "$tmp/r.o" 2>"$tmp/err"
  check compile_negative_time_untuned grep -q 'matmul .* untuned (default schedule; record 2 skipped' "$tmp/err"
  # A row INSERTed by hand without a scheduled-function hash (or migrated
  # from an old schema), its trace valid and its time the best, is not
  # compiled silently: skipped with a warning naming it, next best taken.
  "$MDB" --db "$tmp/hl.db" import "$tmp/rec.jsonl" >/dev/null 2>&1
  sqlite3 "$tmp/hl.db" "INSERT INTO records (workload_id, target, trace, trace_hash, run_secs, mean_sec, round) SELECT workload_id, target, replace(trace, ',8]', ',2]'), 'feedfacefeedface', '[1e-09]', 1e-09, 9 FROM records WHERE id = 1"
  check compile_hashless_inserted test "$(sqlite3 "$tmp/hl.db" 'SELECT id FROM records WHERE sched_hash IS NULL ORDER BY mean_sec LIMIT 1')" = 3
  rm -f "$tmp/r.o"
  "$MC" --task matmul --shape 16,16,16 --db "$tmp/hl.db" -o "$tmp/r.o" --verify 2>"$tmp/err"
  check compile_hashless_exit test $? -eq 0 -a -s "$tmp/r.o"
  check compile_hashless_warning grep -q '^mlc-compile: warning: matmul: record 3 has no scheduled-function hash (written outside mlc-tune?); skipped' "$tmp/err"
  check compile_hashless_next_best grep -q 'matmul .* record 2 ' "$tmp/err"
else
  echo "SKIP compile_tampered: no sqlite3 shell on PATH"
fi
# --verify on a model: every kernel that replays a record is checked.
if [ -x "${MLC_TUNE:-$B/bin/mlc-tune}" ]; then
  "${MLC_TUNE:-$B/bin/mlc-tune}" --task matmul --shape 16,16,16 --trials 4 --trials-per-round 4 \
    --no-baseline -j 1 --db "$tmp/tuned.db" >/dev/null 2>&1
  "$MC" --task matmul --shape 16,16,16 --db "$tmp/tuned.db" -o "$tmp/r.o" --verify 2>"$tmp/err"
  check compile_tuned_verify_exit test $? -eq 0
  check compile_tuned_no_warning test "$(grep -c warning "$tmp/err")" -eq 0
  check compile_tuned_verified grep -q 'verified 1 replayed kernel' "$tmp/err"
  if command -v sqlite3 >/dev/null 2>&1; then
    check compile_tuned_hashes test "$(sqlite3 "$tmp/tuned.db" 'SELECT count(*) FROM records WHERE sched_hash IS NULL')" = 0
  fi
fi
if [ -s "$tmp/m.db" ]; then # the MLP tuned above: both kernels replay a record
  "$MC" --model examples/mlp.json --db "$tmp/m.db" --verify -o "$tmp/mv.o" 2>"$tmp/err"
  check compile_model_verify_exit test $? -eq 0 -a -s "$tmp/mv.o"
  check compile_model_verify grep -q 'verified 2 replayed kernels against the unscheduled ones' "$tmp/err"
fi

# The weights travel in the object as constant data (64-byte aligned,
# read-only); the header only declares them, so it stays small for any
# model. Two models' objects link into one program: every symbol carries
# the model's name.
check compile_header_declares_weights grep -q '^extern const float mlp_w_lv0_packed\[100352\];$' "$tmp/mlp.h"
check compile_header_no_literals test "$(grep -c 'static const float' "$tmp/mlp.h")" -eq 0 \
  -a "$(wc -c <"$tmp/mlp.h")" -lt 8192
if command -v nm >/dev/null 2>&1; then
  nm "$tmp/mlp.o" >"$tmp/nm.txt" 2>&1
  check compile_object_defines_weights grep -q ' R mlp_w_lv0_packed$' "$tmp/nm.txt"
fi
cat >"$tmp/two.c" <<'CEOF'
#include "mlp.h"
#include "tiny_cnn.h"
#include <stdio.h>
int main(void) {
  static float x[784], y[10], cx[3 * 8 * 8], cy[5];
  for (int i = 0; i < 784; i++) x[i] = (float)(i % 7) / 7.0f;
  if (mlp_run(x, y) != 0 || tiny_cnn_run(cx, cy) != 0) return 1;
  /* relu(x w0 + b0) w1 + b1 for output 0, in double */
  double h, y0 = mlp_w_b1[0];
  for (int j = 0; j < 128; j++) {
    h = mlp_w_b0[j];
    for (int k = 0; k < 784; k++) h += (double)x[k] * mlp_w_lv0_packed[((j / 16) * 784 + k) * 16 + j % 16];
    y0 += (h > 0 ? h : 0) * mlp_w_lv4[j * 10];
  }
  return fabs(y0 - y[0]) < 1e-4 ? 0 : 2;
}
CEOF
cc -std=gnu11 -O1 -include string.h -I"$tmp" "$tmp/two.c" "$tmp/mlp.o" "$tmp/tc.o" $RT_SRC -fopenmp -lm \
  -o "$tmp/two" 2>"$tmp/cc_err"
check compile_two_models_link test $? -eq 0
"$tmp/two"
check compile_two_models_run test $? -eq 0
