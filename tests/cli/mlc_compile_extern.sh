#!/bin/sh
# call_extern nodes end to end: a model JSON calling a C
# function between compiled ops; mlc-compile --extern LIB.so --run against
# the plain C reference; -o/--header linked into a C program with the
# user's function, its output checked against a plain C evaluation;
# mlc-tune --model tunes the kernels around the call; the refusals:
# --run without --extern, a library without the symbol, a bad func name,
# an unknown input.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
TUNE=$B/bin/mlc-tune
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# x[2,8] -> dense(w0, b0) -> my_affine(., s) -> relu -> dense(w1) -> y[2,3];
# weights inline, so the C check below can repeat them.
cat >"$tmp/m.json" <<'EOF'
{"name": "ext",
 "inputs": [{"name": "x", "shape": [2, 8]}],
 "weights": [
  {"name": "w0", "shape": [6, 8], "values": [0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.4, -0.3,
    0.2, 0.1, -0.1, 0.3, 0.25, -0.05, 0.15, 0.1, -0.3, 0.2, 0.1, -0.2, 0.3, 0.1, -0.1, 0.05,
    0.05, 0.05, 0.2, -0.1, -0.2, 0.3, 0.1, 0.2, 0.3, -0.1, -0.1, 0.1, 0.2, 0.2, -0.3, 0.1,
    -0.05, 0.15, 0.25, 0.1, -0.15, -0.2, 0.3, 0.2]},
  {"name": "b0", "shape": [6], "values": [0.1, -0.1, 0.05, 0.2, -0.05, 0.0]},
  {"name": "s", "shape": [6], "values": [1.5, -2.0, 0.5, 3.0, -1.0, 2.5]},
  {"name": "w1", "shape": [3, 6], "values": [0.3, -0.2, 0.1, 0.4, -0.1, 0.2,
    -0.3, 0.1, 0.2, 0.1, 0.3, -0.2, 0.2, 0.2, -0.1, -0.3, 0.1, 0.1]}],
 "nodes": [
  {"name": "d", "op": "dense", "inputs": ["x", "w0", "b0"]},
  {"name": "e", "op": "call_extern", "func": "my_affine", "inputs": ["d", "s"], "out_shape": [2, 6]},
  {"name": "r", "op": "relu", "inputs": ["e"]},
  {"name": "y", "op": "dense", "inputs": ["r", "w1"]}],
 "outputs": ["y"]}
EOF
cat >"$tmp/fn.c" <<'EOF'
#include <stdint.h>
/* out[i, j] = a[i, j] * s[j] + 0.5 over [2, 6] */
int32_t my_affine(const float *a, const float *s, float *out) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 6; j++) out[i * 6 + j] = a[i * 6 + j] * s[j] + 0.5f;
  return 0;
}
EOF
cc -shared -fPIC -o "$tmp/libfn.so" "$tmp/fn.c"
check extern_lib_builds test $? -eq 0

"$MC" --model "$tmp/m.json" --print-after load >"$tmp/load.txt" 2>"$tmp/err"
check extern_print_load grep -q 'e = R.call_dps_packed("my_affine", (d, metadata\["s"\]), out_sinfo=R.Tensor((2, 6), dtype="float32"))' "$tmp/load.txt"
"$MC" --model "$tmp/m.json" --print-after dce >"$tmp/dce.txt" 2>"$tmp/err"
check extern_print_after_passes grep -q 'e = R.call_dps_packed("my_affine", (d, metadata' "$tmp/dce.txt"
check extern_listed grep -q 'my_affine .* extern .* calls 1' "$tmp/err"

"$MC" --model "$tmp/m.json" --extern "$tmp/libfn.so" --run --repeat 3 >"$tmp/run.txt" 2>"$tmp/err"
check extern_run_exit test $? -eq 0
check extern_run_matches grep -q '^max abs error y: .* (against the plain C reference)$' "$tmp/run.txt"
check extern_run_no_mismatch test -z "$(grep MISMATCH "$tmp/run.txt")"

# A function that computes something else: the reference calls the same
# function, so they agree; the C program below is the independent check.
# Here: a library returning nonzero fails the run, naming the node.
sed 's/return 0;/return 3;/' "$tmp/fn.c" >"$tmp/bad_fn.c"
cc -shared -fPIC -o "$tmp/libbad.so" "$tmp/bad_fn.c"
"$MC" --model "$tmp/m.json" --extern "$tmp/libbad.so" --run --repeat 3 >"$tmp/out" 2>"$tmp/err"
check extern_run_fn_fails_exit1 test $? -eq 1
check extern_run_fn_fails_msg grep -q "node 'e': call_extern \"my_affine\" returned 3" "$tmp/err"

"$MC" --model "$tmp/m.json" -o "$tmp/ext.o" --header "$tmp/ext.h" 2>"$tmp/err"
check extern_compile_exit test $? -eq 0 -a -s "$tmp/ext.o"
check extern_header_declares grep -q '^int32_t my_affine(const float \*in0, const float \*in1, float \*out);$' "$tmp/ext.h"
check extern_header_calls grep -q 'if (my_affine(v_d, ext_w_s, v_e) != 0) {' "$tmp/ext.h"
cat >"$tmp/main.c" <<'EOF'
#include "ext.h"
#include <math.h>
#include <stdio.h>
/* The model in plain C from the weights the object holds. */
int main(void) {
  float x[16], y[6], want[6];
  for (int i = 0; i < 16; i++) x[i] = (float)((i * 5) % 7) / 7.0f - 0.4f;
  if (ext_run(x, y) != 0) return 2;
  double worst = 0;
  for (int i = 0; i < 2; i++) {
    float r[6];
    for (int j = 0; j < 6; j++) {
      double a = ext_w_b0[j];
      for (int k = 0; k < 8; k++) a += (double)x[i * 8 + k] * ext_w_w0[j * 8 + k];
      float e = (float)a * ext_w_s[j] + 0.5f;
      r[j] = e > 0 ? e : 0;
    }
    for (int j = 0; j < 3; j++) {
      double a = 0;
      for (int k = 0; k < 6; k++) a += (double)r[k] * ext_w_w1[j * 6 + k];
      want[i * 3 + j] = (float)a;
      if (fabs(want[i * 3 + j] - y[i * 3 + j]) > worst) worst = fabs(want[i * 3 + j] - y[i * 3 + j]);
    }
  }
  printf("max_err %g y0 %g\n", worst, y[0]);
  return worst < 1e-5 ? 0 : 1;
}
EOF
RT_SRC="-I. targets/runtime/parallel.c targets/runtime/workspace.c targets/runtime/half.c"
cc -std=gnu11 -O1 -I"$tmp" "$tmp/main.c" "$tmp/ext.o" "$tmp/fn.c" $RT_SRC -fopenmp -lm -lpthread -o "$tmp/prog" 2>"$tmp/cc_err"
check extern_program_links test $? -eq 0
"$tmp/prog" >"$tmp/prog.txt" 2>&1
check extern_program_matches test $? -eq 0
# the same program with the failing function: the entry returns -1
cc -std=gnu11 -O1 -I"$tmp" "$tmp/main.c" "$tmp/ext.o" "$tmp/bad_fn.c" $RT_SRC -fopenmp -lm -lpthread -o "$tmp/prog_bad" 2>"$tmp/cc_err"
"$tmp/prog_bad" >/dev/null 2>&1
check extern_program_fn_fails test $? -eq 2

# refusals
"$MC" --model "$tmp/m.json" --run --repeat 3 >/dev/null 2>"$tmp/err"
check extern_run_needs_lib_exit1 test $? -eq 1
check extern_run_needs_lib_msg grep -q "m.json: node 'e': call_extern \"my_affine\": no extern library given" "$tmp/err"
cc -shared -fPIC -o "$tmp/libother.so" -x c - <<'EOF'
int other(void) { return 0; }
EOF
"$MC" --model "$tmp/m.json" --extern "$tmp/libother.so" --run >/dev/null 2>"$tmp/err"
check extern_missing_symbol_exit1 test $? -eq 1
check extern_missing_symbol_msg grep -q "node 'e': call_extern \"my_affine\": no symbol my_affine in .*libother.so" "$tmp/err"
"$MC" --model "$tmp/m.json" --extern "$tmp/nowhere.so" --run >/dev/null 2>"$tmp/err"
check extern_missing_lib_exit1 test $? -eq 1
check extern_missing_lib_msg grep -q "extern library .*nowhere.so" "$tmp/err"
sed 's/"func": "my_affine"/"func": "my-affine"/' "$tmp/m.json" >"$tmp/badname.json"
"$MC" --model "$tmp/badname.json" >/dev/null 2>"$tmp/err"
check extern_bad_func_exit1 test $? -eq 1
check extern_bad_func_msg grep -q "badname.json: node 'e': func \"my-affine\" is not a C identifier" "$tmp/err"
sed 's/"inputs": \["d", "s"\]/"inputs": ["d", "scale"]/' "$tmp/m.json" >"$tmp/badin.json"
"$MC" --model "$tmp/badin.json" >/dev/null 2>"$tmp/err"
check extern_unknown_input_exit1 test $? -eq 1
check extern_unknown_input_msg grep -q "badin.json: node 'e': input 1 \"scale\" is not an input, weight or node" "$tmp/err"
"$MC" --task matmul --shape 8,8,8 -o "$tmp/mm.o" --extern "$tmp/libfn.so" >/dev/null 2>"$tmp/err"
check extern_needs_model_exit2 test $? -eq 2
"$MC" --model "$tmp/m.json" -o "$tmp/x.o" --extern "$tmp/libfn.so" >/dev/null 2>"$tmp/err"
check extern_needs_run_exit2 test $? -eq 2
check extern_needs_run_msg grep -q -- "--extern goes with --run or --report" "$tmp/err"

# mlc-tune --model: the kernels around the call are tuned, the call is not a task
"$TUNE" --model "$tmp/m.json" --trials 4 --trials-per-round 2 --db "$tmp/t.db" \
  --cost-model random --no-baseline -j 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then pass extern_tune_exit; else fail extern_tune_exit "exit $rc: $(head -c 300 "$tmp/err" | tr '\n' ' ')"; fi
check extern_tune_tasks grep -q '^ext on .*: 3 tasks' "$tmp/out"
check extern_tune_notes_skip grep -q 'call_extern "my_affine" is not tuned' "$tmp/err"
"$MC" --model "$tmp/m.json" --db "$tmp/t.db" --extern "$tmp/libfn.so" --run --repeat 2 >"$tmp/run2.txt" 2>"$tmp/err"
check extern_tuned_run_exit test $? -eq 0
check extern_tuned_run_matches grep -q '^max abs error y: .* (against the plain C reference)$' "$tmp/run2.txt"
"$MC" --model "$tmp/m.json" --db "$tmp/t.db" --extern "$tmp/libfn.so" --report --repeat 3 >"$tmp/rep.txt" 2>"$tmp/err"
check extern_report_exit test $? -eq 0
check extern_report_row grep -q '^my_affine  *1 .* us .*%  call_extern$' "$tmp/rep.txt"
check extern_report_total grep -q '^call_extern total: .* us per run$' "$tmp/rep.txt"

# examples/extern: the MLP with its first layer compiled and the rest done
# by the library functions of env.c computes what examples/mlp.json
# computes (in-process on the same seeded input, and as a linked program
# on an .npy input against the compiled MLP's output).
cc -shared -fPIC -o "$tmp/libenv.so" examples/extern/env.c
"$MC" --model examples/extern/mlp_env.json --weights examples/mlp --extern "$tmp/libenv.so" --run \
  --repeat 2 --run-output "$tmp/env_out.npy" >"$tmp/env_run.txt" 2>"$tmp/err"
check extern_example_run_exit test $? -eq 0
"$MC" --model examples/mlp.json --run --repeat 2 --run-output "$tmp/mlp_out.npy" >/dev/null 2>"$tmp/err"
check extern_example_mlp_run_exit test $? -eq 0
cc -std=gnu11 -O1 -DOUT_SHAPE=1,10 examples/run_model.c -lm -o "$tmp/cmp" 2>"$tmp/cc_err"
"$tmp/cmp" --compare "$tmp/env_out.npy" "$tmp/mlp_out.npy" >"$tmp/cmp.txt" 2>&1
check extern_example_matches_mlp test $? -eq 0
python3 - "$tmp/x.npy" <<'PYEOF'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 784), }"
hdr += " " * (118 - len(hdr)) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<784f", *[((i * 37) % 101) / 101.0 for i in range(784)]))
PYEOF
"$MC" --model examples/mlp.json --run "$tmp/x.npy" --repeat 2 --run-output "$tmp/mlp_x.npy" >/dev/null 2>"$tmp/err"
check extern_example_npy_input test $? -eq 0
"$MC" --model examples/extern/mlp_env.json --weights examples/mlp -o "$tmp/env.o" --header "$tmp/mlp_env.h" 2>"$tmp/err"
check extern_example_compile test $? -eq 0
cc -std=gnu11 -O1 -I"$tmp" -DMODEL_HEADER='"mlp_env.h"' -DMODEL_RUN=mlp_env_run -DIN_SHAPE=1,784 \
  -DOUT_SHAPE=1,10 examples/run_model.c "$tmp/env.o" examples/extern/env.c $RT_SRC -lpthread -lm \
  -o "$tmp/run_env" 2>"$tmp/cc_err"
check extern_example_links test $? -eq 0
"$tmp/run_env" "$tmp/x.npy" "$tmp/env_linked.npy" "$tmp/mlp_x.npy" >"$tmp/cmp.txt" 2>&1
check extern_example_linked_matches_mlp test $? -eq 0

# ONNX: tiny_cnn with its first Relu a node of the domain "mlc.extern"
# (op_type my_relu, out_shape [1, 4, 8, 8]; the fuzz_onnx seed), its relu
# done in C, matches PyTorch's output of the unaltered model.
cat >"$tmp/relu.c" <<'CEOF'
#include <stdint.h>
int32_t my_relu(const float *x, float *y) {
  for (int i = 0; i < 256; i++) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}
CEOF
cc -shared -fPIC -o "$tmp/librelu.so" "$tmp/relu.c"
X=tests/fuzz/corpus/fuzz_onnx/extern_relu.onnx
"$MC" --model $X --print-after load >"$tmp/onnx.txt" 2>"$tmp/err"
check extern_onnx_loads grep -q 'R.call_dps_packed("my_relu", (' "$tmp/onnx.txt"
"$MC" --model $X --extern "$tmp/librelu.so" --run tests/onnx/tiny_cnn_input.npy \
  --run-output "$tmp/cnn_out.npy" --repeat 2 >/dev/null 2>"$tmp/err"
check extern_onnx_run_exit test $? -eq 0
cc -std=gnu11 -O1 -DOUT_SHAPE=1,5 examples/run_model.c -lm -o "$tmp/cmp5" 2>"$tmp/cc_err"
"$tmp/cmp5" --compare "$tmp/cnn_out.npy" tests/onnx/tiny_cnn_output.npy >"$tmp/cmp.txt" 2>&1
check extern_onnx_matches_pytorch test $? -eq 0
