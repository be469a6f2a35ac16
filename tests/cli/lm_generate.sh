#!/bin/sh
# Generation with a KV cache: the tiny GPT-2 and Llama of tests/onnx/lm/
# exported as prefill + decode step (examples/lm_models.py
# export_generation), each compiled once for every length up to 64 by
# mlc-generate, generate 57 tokens after a 7-token prompt (the last step
# fills the cache to the bound): PyTorch's greedy tokens (it decoding with
# its own cache), every logit row within 1e-4 relative of PyTorch's. The
# GPT-2 step built with mlc-compile (its dynamic axis named by --dim alone)
# documents its caches as appended in place, and its entry gives the same
# logits and caches whether the caller passes one buffer as past and
# present or two; the step tuned with mlc-tune --dim generates the same. Prompts and lengths outside the build, and a prefill that
# is no prefill, are refused with a message.
. tests/lm_lib.sh
MG=$B/bin/mlc-generate
NONE=/nonexistent/none.db

# The int64 elements of a small .npy file, one line.
npy_ints() {
  n=$(($(npy_shape "$1" | tr ',' '*')))
  tail -c $((n * 8)) "$1" | od -An -v -t d8 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}

for m in gpt2 llama; do
  "$MG" --prefill $D/${m}_prefill_tiny.onnx --step $D/${m}_step_tiny.onnx \
    --prompt-file $D/${m}_gen_prompt.npy --tokens 57 --max-len 64 --db $NONE \
    --logits "$tmp/logits.npy" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check gen_${m}_runs test $rc -eq 0
  [ $rc -eq 0 ] || tail -5 "$tmp/err"
  want=$(npy_ints $D/${m}_gen_tokens.npy)
  got=$(sed -n 's/^tokens: //p' "$tmp/out")
  check gen_${m}_tokens_are_pytorchs test "$got" = "$want"
  [ "$got" = "$want" ] || printf '  got  %s\n  want %s\n' "$got" "$want"
  check gen_${m}_reports_prefill grep -q "^prefill: 7 tokens in .* tokens/s" "$tmp/out"
  check gen_${m}_reports_decode grep -q "^decode: 56 steps in .* tokens/s" "$tmp/out"
  matches_pytorch gen_${m}_logits_match_pytorch "$m: 57 rows of logits" "$tmp/logits.npy" \
    $D/${m}_gen_logits.npy
done
P=$D/gpt2_prefill_tiny.onnx
S=$D/gpt2_step_tiny.onnx

# Tuned: the step's kernels (those of past as specializations) tuned with
# mlc-tune --dim alone; generation from the records gives the same tokens.
"$B/bin/mlc-tune" --model $S --dim past=1..63 --trials 16 --db "$tmp/tuned.db" >"$tmp/out" 2>&1
check gen_step_tunes test $? -eq 0
"$MG" --prefill $P --step $S --prompt-file $D/gpt2_gen_prompt.npy --tokens 57 --max-len 64 \
  --db "$tmp/tuned.db" >"$tmp/out" 2>"$tmp/err"
check gen_tuned_tokens_are_pytorchs test "$(sed -n 's/^tokens: //p' "$tmp/out")" = "$(npy_ints $D/gpt2_gen_tokens.npy)"

# Outside the build: one token too many for 64 positions (the last token is
# never fed back, so 58 fit), a prompt too long.
"$MG" --prefill $P --step $S --prompt-file $D/gpt2_gen_prompt.npy --tokens 59 --max-len 64 \
  --db $NONE >"$tmp/out" 2>"$tmp/err"
check gen_too_long_refused test $? -eq 1
check gen_too_long_message grep -q "59 tokens after a prompt of 7: the decode step is built for positions 1..63" "$tmp/err"
"$MG" --prefill $P --step $S --prompt-len 65 --max-len 64 --db $NONE >"$tmp/out" 2>"$tmp/err"
check gen_long_prompt_refused test $? -eq 1
check gen_long_prompt_message grep -q "a prompt of 65 tokens: prefill is built for 1..64" "$tmp/err"
# The step given as prefill.
"$MG" --prefill $S --step $S --max-len 64 --db $NONE >"$tmp/out" 2>"$tmp/err"
check gen_bad_prefill_refused test $? -eq 1
check gen_bad_prefill_message grep -q "prefill takes one input, the token ids" "$tmp/err"
# A model with no dynamic axis.
"$MG" --prefill tests/onnx/tiny_cnn.onnx --step $S --max-len 64 --db $NONE >"$tmp/out" 2>"$tmp/err"
check gen_no_axis_refused test $? -eq 1
check gen_no_axis_message grep -q "tiny_cnn.onnx declares no dynamic axis" "$tmp/err"
"$MG" --prefill $P >"$tmp/out" 2>"$tmp/err"
check gen_usage test $? -eq 2
"$MG" --prefill $P --step $S --prompt-len 5 --tokens 4 --max-len 64 --db $NONE --profile \
  >"$tmp/out" 2>"$tmp/err"
check gen_profile_lists_kernels grep -q "^step_gpt2_step_tiny_append .* 4 " "$tmp/out"
"$MG" --help | grep -q "in place"
check gen_help test $? -eq 0

# The step as an object and header: the axis named by --dim alone.
"$MC" --model $S --db $NONE --dim past=1..63 -o "$tmp/step.o" --header "$tmp/step.h" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check gen_step_compiles test $rc -eq 0
[ $rc -eq 0 ] || tail -5 "$tmp/err"
check gen_step_header_documents_append grep -q "output1 (present_key_0) = input2 (past_key_0) + new rows" "$tmp/step.h"
cat >"$tmp/inplace.c" <<'C'
#include "step.h"
#include <string.h>
#define ROW 32
#define NC 4
static float a[NC][64 * ROW], b[NC][64 * ROW], c[NC][64 * ROW], la[96], lb[96];
int main(void) {
  int64_t ids = 5, pos = 9, past = 9;
  for (int k = 0; k < NC; k++)
    for (int i = 0; i < 64 * ROW; i++) a[k][i] = b[k][i] = (float)((i * 7 + k) % 13) / 13.0f - 0.5f;
  int rc = gpt2_step_tiny_run(&ids, &pos, a[0], a[1], a[2], a[3], la, a[0], a[1], a[2], a[3], past);
  rc |= gpt2_step_tiny_run(&ids, &pos, b[0], b[1], b[2], b[3], lb, c[0], c[1], c[2], c[3], past);
  if (rc) return 3;
  if (memcmp(la, lb, sizeof la)) return 4;
  for (int k = 0; k < NC; k++)
    if (memcmp(a[k], c[k], sizeof(float) * (size_t)(past + 1) * ROW)) return 5;
  return 0;
}
C
"$CC" -std=gnu11 -O1 -I"$tmp" "$tmp/inplace.c" "$tmp/step.o" targets/runtime/parallel.c \
  targets/runtime/workspace.c targets/runtime/half.c -I. -lpthread -lm -o "$tmp/inplace" 2>"$tmp/cc_err"
check gen_step_links test $? -eq 0 || head -10 "$tmp/cc_err"
"$tmp/inplace"
rc=$?
check gen_step_in_place_same_as_copied test $rc -eq 0

echo "lm_generate: $fails failed"
[ $fails -eq 0 ]
