#!/bin/sh
# One build for every sequence length: the small language models of
# tests/onnx/lm/ compiled once with `--input-shape ids=1,seq --dim
# seq=1..64` into one object and header, and that object, linked into a
# plain C program, run at lengths 1, 7 and 64 (the bound) on PyTorch's
# inputs: every output within 1e-4 relative of PyTorch's
# (examples/run_model.c --compare; tests/onnx/make_lm.py wrote them).
# A length outside 1..64 returns -2 with the header's message, and so does
# a token id outside its table at a length inside; mlc-compile --run of the
# same build refuses such a length (exit 1). A --dim naming no input
# extent, bad bounds, a name the entry takes itself and a range too small
# to build from are refused.
. tests/lm_lib.sh

# The program: argv[1] the length, then one .npy per input (int64), then
# per output the reference .npy (whose header it copies) and the .npy to
# write. RUN_CALL is the entry's call over in0.., out0.., seq.
cat >"$tmp/drive.c" <<'EOF'
#include MODEL_HEADER
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long payload(FILE *f) {
  unsigned char h[10];
  if (fread(h, 1, 10, f) != 10) return -1;
  return 10 + (h[8] | (long)h[9] << 8);
}
/* The file's payload into *data (bytes), its header into *head. */
static long slurp(const char *path, char **head, long *head_len, char **data) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  long p = payload(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f) - p;
  *head = malloc((size_t)p);
  *data = malloc((size_t)n + 8);
  fseek(f, 0, SEEK_SET);
  if (fread(*head, 1, (size_t)p, f) != (size_t)p || fread(*data, 1, (size_t)n, f) != (size_t)n) n = -1;
  fclose(f);
  *head_len = p;
  return n;
}
int main(int argc, char **argv) {
  if (argc != 2 + N_IN + 2 * N_OUT) return 2;
  int64_t seq = atoll(argv[1]);
  int64_t *in[N_IN];
  float *out[N_OUT];
  char *head[N_OUT], *junk;
  long head_len[N_OUT], out_len[N_OUT], hl;
  for (int i = 0; i < N_IN; i++) {
    char *d;
    if (slurp(argv[2 + i], &junk, &hl, &d) < 0) return 3;
    in[i] = (int64_t *)d;
  }
  for (int i = 0; i < N_OUT; i++) {
    char *d;
    if ((out_len[i] = slurp(argv[2 + N_IN + 2 * i], &head[i], &head_len[i], &d)) < 0) return 3;
    out[i] = (float *)d;
    memset(out[i], 0, (size_t)out_len[i]);
  }
  int rc = RUN_CALL;
  if (rc != 0) {
    printf("rc %d: %s\n", rc, ERROR_FN());
    return 10 - rc;
  }
  for (int i = 0; i < N_OUT; i++) {
    FILE *f = fopen(argv[3 + N_IN + 2 * i], "wb");
    if (!f || fwrite(head[i], 1, (size_t)head_len[i], f) != (size_t)head_len[i] ||
        fwrite(out[i], 1, (size_t)out_len[i], f) != (size_t)out_len[i])
      return 4;
    fclose(f);
  }
  return 0;
}
EOF

for m in bert gpt2 llama; do
  shapes=""
  for i in $(inputs_of $m); do shapes="$shapes --input-shape $i=1,seq"; done
  # shellcheck disable=SC2086
  "$MC" --model "$D/${m}_tiny.onnx" --db /nonexistent/none.db $shapes --dim seq=1..64 \
    -o "$tmp/$m.o" --header "$tmp/$m.h" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "lm_dyn_${m}_builds_once" test $rc -eq 0
  [ $rc -eq 0 ] || { tail -5 "$tmp/err"; continue; }
  check "lm_dyn_${m}_header_takes_seq" grep -q "_run(.*int64_t seq)" "$tmp/$m.h"
  check "lm_dyn_${m}_header_documents_shapes" grep -q "(1, seq" "$tmp/$m.h"
  n_in=0; n_out=0; call=""
  for i in $(inputs_of $m); do call="${call}in[$n_in], "; n_in=$((n_in + 1)); done
  for o in $(outputs_of $m); do call="${call}out[$n_out], "; n_out=$((n_out + 1)); done
  "$CC" -std=gnu11 -O1 -I"$tmp" -DMODEL_HEADER="\"$m.h\"" -DN_IN=$n_in -DN_OUT=$n_out \
    -DRUN_CALL="${m}_tiny_run(${call}seq)" -DERROR_FN=${m}_tiny_error "$tmp/drive.c" "$tmp/$m.o" \
    targets/runtime/parallel.c targets/runtime/workspace.c targets/runtime/half.c -I. -lpthread -lm \
    -o "$tmp/$m" 2>"$tmp/cc_err"
  check "lm_dyn_${m}_links" test $? -eq 0 || head -10 "$tmp/cc_err"
  for s in 1 7 64; do
    args="$s"
    for i in $(inputs_of $m); do args="$args $D/${m}_s${s}_$i.npy"; done
    for o in $(outputs_of $m); do args="$args $D/${m}_s${s}_$o.npy $tmp/${m}_${s}_$o.npy"; done
    # shellcheck disable=SC2086
    "$tmp/$m" $args
    check "lm_dyn_${m}_s${s}_runs" test $? -eq 0
    for o in $(outputs_of $m); do
      matches_pytorch "lm_dyn_${m}_s${s}_${o}_matches_pytorch" "$m s=$s $o" "$tmp/${m}_${s}_$o.npy" \
        "$D/${m}_s${s}_$o.npy"
    done
  done
done

# Outside the bounds: -2 and the header's message, nothing computed.
for s in 0 65; do
  "$tmp/gpt2" $s $D/gpt2_s7_input_ids.npy $D/gpt2_s7_logits.npy "$tmp/x.npy" >"$tmp/out"
  check "lm_dyn_seq_${s}_refused" test $? -eq 12
  check "lm_dyn_seq_${s}_message" grep -q "size seq = $s is outside its bounds 1..64" "$tmp/out"
done
# A token id outside the table at a length inside the bounds.
cp $D/gpt2_s7_input_ids.npy "$tmp/bad.npy"
/usr/bin/python3 -c "
import struct
f = open('$tmp/bad.npy', 'r+b'); h = f.read(10); f.seek(10 + (h[8] | h[9] << 8) + 8 * 6); f.write(struct.pack('<q', 500))"
"$tmp/gpt2" 7 "$tmp/bad.npy" $D/gpt2_s7_logits.npy "$tmp/x.npy" >"$tmp/out"
check lm_dyn_bad_id_refused test $? -eq 12
check lm_dyn_bad_id_message grep -q "input 'input_ids': element 6 is 500" "$tmp/out"

# mlc-compile --run of the build: the length from --input, or --size; a
# length outside the bounds refused.
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,seq \
  --dim seq=1..64 --run --repeat 1 --input $D/gpt2_s7_input_ids.npy >"$tmp/out" 2>"$tmp/err"
check lm_dyn_run_from_input test $? -eq 0
check lm_dyn_run_from_input_size grep -q "sizes: seq=7" "$tmp/out"
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,seq \
  --dim seq=1..64 --run --repeat 1 --size seq=65 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_run_size_out_of_bounds test $? -eq 1
check lm_dyn_run_size_message grep -q "size seq = 65 is outside its bounds 1..64" "$tmp/err"

# --report of the build at a size: each kernel's calls and time per call
# from the runner's profile, the output checked but not printed.
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,seq \
  --dim seq=1..64 --report --repeat 2 --size seq=9 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_report test $? -eq 0
check lm_dyn_report_sizes grep -q "sizes: seq=9" "$tmp/out"
check lm_dyn_report_kernel grep -Eq "^gpt2_tiny_fused_attention1 +2 +[0-9.]+ us +[0-9.]+%  untuned" "$tmp/out"
check lm_dyn_report_total grep -q "^kernels total: " "$tmp/out"
check lm_dyn_report_no_output test "$(grep -c '^output ' "$tmp/out")" -eq 0

# Refused: a --dim no input shape names; a bad spelling; a range too small.
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,8 \
  --dim seq=1..64 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_unused_dim_refused test $? -eq 1
check lm_dyn_unused_dim_message grep -q "size seq is no extent of an input shape" "$tmp/err"
"$MC" --model $D/gpt2_tiny.onnx --input-shape input_ids=1,seq --dim seq=64..1 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_bad_bounds_usage test $? -eq 2
"$MC" --model $D/gpt2_tiny.onnx --input-shape input_ids=1,input --dim input=1..64 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_reserved_name_usage test $? -eq 2
check lm_dyn_reserved_name_message grep -q "size name 'input' is taken" "$tmp/err"
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,seq \
  --dim seq=1..3 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_small_range_refused test $? -eq 1
check lm_dyn_small_range_message grep -q "needs at least 3 values from 2 up" "$tmp/err"

# The kernels of the build as TVMScript (--dump-tasks): each a function of
# seq that parses back and verifies (mlc-ir check).
mkdir -p "$tmp/tasks"
"$MC" --model $D/llama_tiny.onnx --input-shape input_ids=1,seq --dim seq=1..64 \
  --dump-tasks "$tmp/tasks" >/dev/null 2>"$tmp/err"
check lm_dyn_dump_tasks test $? -eq 0
n_sym=0; n_bad=0
for f in "$tmp"/tasks/*.py; do
  grep -q "seq = T.int" "$f" && n_sym=$((n_sym + 1))
  "$B/bin/mlc-ir" check "$f" >/dev/null 2>&1 || { n_bad=$((n_bad + 1)); echo "  does not check: $f"; }
done
check lm_dyn_dump_tasks_symbolic test $n_sym -gt 5
check lm_dyn_dump_tasks_check test $n_bad -eq 0

# Tuning across lengths: mlc-tune --dim tunes each kernel that takes the
# length as its specializations at 1, 16 and 64 (stored as seq=16; 12
# trials measure the default schedules at the bound, where the time is),
# and mlc-compile --dim builds every kernel with such records from them,
# the sizes it branches at without one (1, 16, 32) taking their own
# default schedule: the same logits as untuned.
"$B/bin/mlc-tune" --model $D/gpt2_tiny.onnx --input-shape input_ids=1,seq --dim seq=1..64 \
  --db "$tmp/t.db" --trials 12 >"$tmp/out" 2>"$tmp/err"
check lm_dyn_tune test $? -eq 0 || tail -5 "$tmp/err"
check lm_dyn_tune_at_sizes grep -q "gpt2_tiny_add14@seq=16" "$tmp/out"
"$MC" --model $D/gpt2_tiny.onnx --db "$tmp/t.db" --input-shape input_ids=1,seq --dim seq=1..64 \
  --run --repeat 1 --input $D/gpt2_s7_input_ids.npy --run-output "$tmp/tuned.npy" >"$tmp/out" 2>"$tmp/err"
check lm_dyn_tuned_build_runs test $? -eq 0
check lm_dyn_tuned_build_from_sizes grep -Eq "fused_dense_add_add2 .* us at seq=64; default at 1,16,32\)" "$tmp/err"
matches_pytorch lm_dyn_tuned_matches_pytorch "tuned build s=7" "$tmp/tuned.npy" $D/gpt2_s7_logits.npy

echo "lm_dynamic: $fails failed"
[ $fails -eq 0 ]
