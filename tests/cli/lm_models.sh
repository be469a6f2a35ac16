#!/bin/sh
# The small language models of tests/onnx/lm/ (tests/onnx/make_lm.py:
# BERT-, GPT-2- and Llama-style exports from PyTorch at sequence length 8,
# the sequence axis dynamic) compiled at two other lengths (5 and 12) with
# --input-shape and run in-process on PyTorch's int64 inputs: every output
# must match PyTorch within 1e-4 relative (examples/run_model.c --compare).
# Then GPT-2 linked into a plain C program through its header: the same
# logits on good ids; a token id outside the embedding table returns -2
# before any kernel runs, the header's error function naming the input,
# and mlc-compile --run refuses it the same way (exit 1). A seeded --run
# (no --input) draws valid ids.
. tests/lm_lib.sh

for m in bert gpt2 llama; do
  for s in 5 12; do
    args=""
    for i in $(inputs_of $m); do
      args="$args --input-shape $i=1,$s --input $i=$D/${m}_s${s}_$i.npy"
    done
    for o in $(outputs_of $m); do args="$args --run-output $o=$tmp/${m}_${s}_$o.npy"; done
    # shellcheck disable=SC2086
    "$MC" --model "$D/${m}_tiny.onnx" --db /nonexistent/none.db --run --repeat 1 $args \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    check "lm_${m}_s${s}_run" test $rc -eq 0
    [ $rc -eq 0 ] || tail -5 "$tmp/err"
    for o in $(outputs_of $m); do
      matches_pytorch "lm_${m}_s${s}_${o}_matches_pytorch" "$m s=$s $o" "$tmp/${m}_${s}_$o.npy" \
        "$D/${m}_s${s}_$o.npy"
    done
  done
done

# GPT-2 at length 5 as a linked C program.
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,5 \
  -o "$tmp/g.o" --header "$tmp/g.h" 2>"$tmp/err"
check lm_gpt2_object_header test $? -eq 0 -a -s "$tmp/g.o"
check lm_gpt2_header_int64_input grep -q "gpt2_tiny_run(const int64_t \*input, float \*output)" "$tmp/g.h"
cat >"$tmp/prog.c" <<'EOF'
#include "g.h"
#include <stdio.h>
#include <string.h>
/* argv[1]: the int64 ids .npy; argv[2]: the logits --run wrote. Exit 0
 * when the logits are the same and a bad id is refused as documented. */
static long payload(FILE *f) {
  unsigned char h[10];
  if (fread(h, 1, 10, f) != 10) return -1;
  return 10 + (h[8] | (long)h[9] << 8);
}
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int64_t ids[5];
  static float y[5 * 1024], want[5 * 1024];
  FILE *f = fopen(argv[1], "rb"), *g = fopen(argv[2], "rb");
  if (!f || !g || fseek(f, payload(f), SEEK_SET) || fread(ids, 8, 5, f) != 5) return 3;
  long n = 0;
  if (fseek(g, payload(g), SEEK_SET)) return 3;
  n = (long)fread(want, 4, sizeof want / 4, g);
  if (gpt2_tiny_run(ids, y) != 0) {
    printf("good ids failed: %s\n", gpt2_tiny_error());
    return 1;
  }
  for (long i = 0; i < n; i++)
    if (y[i] != want[i]) {
      printf("logit %ld differs: %g vs %g\n", i, y[i], want[i]);
      return 1;
    }
  ids[3] = 1000000;
  int rc = gpt2_tiny_run(ids, y);
  printf("bad id: rc %d, %s\n", rc, gpt2_tiny_error());
  return !(rc == -2 && strstr(gpt2_tiny_error(), "input 'input_ids': element 3 is 1000000"));
}
EOF
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,5 --run \
  --repeat 1 --input $D/gpt2_s5_input_ids.npy --run-output "$tmp/g_ref.npy" >/dev/null 2>&1
"$CC" -std=gnu11 -O1 -I"$tmp" "$tmp/prog.c" "$tmp/g.o" targets/runtime/parallel.c \
  targets/runtime/workspace.c targets/runtime/half.c -I. -lpthread -lm -o "$tmp/prog" 2>"$tmp/cc_err"
check lm_gpt2_links test $? -eq 0 || head -10 "$tmp/cc_err"
"$tmp/prog" $D/gpt2_s5_input_ids.npy "$tmp/g_ref.npy"
check lm_gpt2_linked_same_logits_and_bad_id_refused test $? -eq 0

# The same bad id in-process: refused before any kernel, naming the input.
/usr/bin/printf '\223NUMPY\001\000v\000{'"'"'descr'"'"': '"'"'<i8'"'"', '"'"'fortran_order'"'"': False, '"'"'shape'"'"': (1, 5), }' >"$tmp/bad.npy"
pad=$((128 - $(wc -c <"$tmp/bad.npy") - 1))
head -c $pad /dev/zero | tr '\0' ' ' >>"$tmp/bad.npy"
printf '\n' >>"$tmp/bad.npy"
for v in 1 2 3 1000000 4; do
  /usr/bin/python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<q', $v))" >>"$tmp/bad.npy"
done
"$MC" --model $D/gpt2_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,5 --run \
  --input input_ids="$tmp/bad.npy" >"$tmp/out" 2>"$tmp/err"
check lm_gpt2_run_bad_id_exit1 test $? -eq 1
check lm_gpt2_run_bad_id_msg grep -q "input 'input_ids': element 3 is 1000000, outside \[-" "$tmp/err"

# Without --input, --run seeds the inputs: token ids are drawn inside the
# tables they index (BERT's token types: 2 rows), so the run succeeds.
"$MC" --model $D/bert_tiny.onnx --db /nonexistent/none.db --input-shape input_ids=1,12 \
  --input-shape token_type_ids=1,12 --input-shape attention_mask=1,12 --run --repeat 1 \
  >"$tmp/out" 2>"$tmp/err"
check lm_bert_seeded_run test $? -eq 0
check lm_bert_seeded_run_checked grep -q "max abs error last_hidden_state" "$tmp/out"

echo "lm_models: $fails failed"
[ $fails -eq 0 ]
