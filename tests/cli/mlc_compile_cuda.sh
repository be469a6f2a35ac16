#!/bin/sh
# mlc-compile --target cuda without a GPU: the PTX (checked by ptxas when
# the CUDA toolkit is installed), the host object + header linked into a C
# program and run against a fake CUDA driver (tests/fake_cuda.c, loaded
# through MLC_CUDA_DRIVER) that records the launch and computes the kernel's
# C reference on the device copies; the no-driver, no-device and failed-
# launch paths; kernels and models refused with a message; and mlc-ir run
# --target cuda through the same driver loader.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
IR=$B/bin/mlc-ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

cc -std=gnu11 -O1 -shared -fPIC -Wall -Wextra -Werror tests/fake_cuda.c -o "$tmp/libfakecuda.so" 2>"$tmp/cc_err"
check cuda_fake_driver_builds test $? -eq 0

"$MC" --task vecadd --shape 1000 --target "cuda -arch=sm_80" --db "$tmp/none.db" \
  -o "$tmp/va.o" --header "$tmp/va.h" --ptx "$tmp/va.ptx" 2>"$tmp/err"
check cuda_compile_exit test $? -eq 0 -a -s "$tmp/va.o"
check cuda_compile_untuned grep -q 'vecadd .* untuned' "$tmp/err"
check cuda_ptx_entry grep -q '^.visible .entry vecadd(' "$tmp/va.ptx"
launch=$(sed -n 's|^// mlc.launch vecadd \(.*\)$|\1|p' "$tmp/va.ptx")
check cuda_ptx_launch_line test "$launch" = "grid=4,1,1 block=256,1,1 shared=0"
check cuda_header_says_gpu grep -q 'Runs on the GPU' "$tmp/va.h"
check cuda_header_entry grep -q '^int32_t vecadd(void \*\*args);$' "$tmp/va.h"
PTXAS=/usr/local/cuda/bin/ptxas
if [ -x "$PTXAS" ]; then
  "$PTXAS" -arch=sm_80 "$tmp/va.ptx" -o /dev/null 2>"$tmp/ptxas_err"
  check cuda_ptxas_accepts test $? -eq 0
else
  echo "SKIP cuda_ptxas_accepts: no $PTXAS"
fi

cat >"$tmp/main.c" <<'CEOF'
#include "va.h"
#include <stdio.h>
int main(void) {
  static float A[1000], B[1000], C[1000];
  for (int i = 0; i < 1000; i++) A[i] = (float)i, B[i] = 0.5f * (float)(i % 7), C[i] = -1;
  for (int call = 0; call < 2; call++) {
    if (vecadd_call(A, B, C) != 0) {
      printf("error: %s\n", mlc_rt_cuda_error());
      return 1;
    }
    for (int i = 0; i < 1000; i++)
      if (C[i] != A[i] + B[i]) {
        printf("wrong C[%d] = %g\n", i, C[i]);
        return 2;
      }
  }
  printf("ok\n");
  return 0;
}
CEOF
# The runtime from source: $B/libmlcrt.a is sanitized in `make asan test`.
cc -std=gnu11 -O1 -I. -I"$tmp" "$tmp/main.c" "$tmp/va.o" targets/runtime/cuda_launch.c \
  -ldl -lpthread -o "$tmp/main" 2>"$tmp/cc_err"
check cuda_object_links test $? -eq 0

MLC_CUDA_DRIVER="$tmp/libfakecuda.so" FAKE_CUDA_LOG="$tmp/log" FAKE_CUDA_REFERENCE=vecadd \
  "$tmp/main" >"$tmp/out" 2>&1
check cuda_fake_run_exit test $? -eq 0
check cuda_fake_run_results grep -q '^ok$' "$tmp/out"
check cuda_fake_launch_extents test "$(grep -c "^launch vecadd $launch$" "$tmp/log")" -eq 2
check cuda_fake_loaded_once test "$(grep -c '^load ' "$tmp/log")" -eq 1
check cuda_fake_ptx_given cmp -s "$tmp/log.ptx" "$tmp/va.ptx"
check cuda_fake_copies_in test "$(grep -c '^htod 4000$' "$tmp/log")" -eq 6
check cuda_fake_copies_out test "$(grep -c '^dtoh 4000$' "$tmp/log")" -eq 6

# Without the reference the fake leaves C as copied in: the check must fail.
MLC_CUDA_DRIVER="$tmp/libfakecuda.so" "$tmp/main" >"$tmp/out" 2>&1
check cuda_fake_wrong_results_caught test $? -eq 2

MLC_CUDA_DRIVER="$tmp/nowhere/libcuda.so.1" "$tmp/main" >"$tmp/out" 2>&1
check cuda_no_driver_exit test $? -eq 1
check cuda_no_driver_msg grep -q '^error: vecadd: no CUDA driver (cannot open ' "$tmp/out"
if [ ! -e /dev/nvidia0 ]; then # the real driver, if any, finds no device here
  "$tmp/main" >"$tmp/out" 2>&1
  check cuda_real_no_device_exit test $? -eq 1
  check cuda_real_no_device_msg grep -Eq '^error: vecadd: no (CUDA driver|CUDA device|usable CUDA device)' "$tmp/out"
fi
MLC_CUDA_DRIVER="$tmp/libfakecuda.so" FAKE_CUDA_DEVICES=0 "$tmp/main" >"$tmp/out" 2>&1
check cuda_fake_no_device test $? -eq 1 -a "$(cat "$tmp/out")" = "error: vecadd: no CUDA device"
MLC_CUDA_DRIVER="$tmp/libfakecuda.so" FAKE_CUDA_FAIL_LAUNCH=1 FAKE_CUDA_LOG="$tmp/log2" \
  "$tmp/main" >"$tmp/out" 2>&1
check cuda_fake_launch_fails test $? -eq 1
check cuda_fake_launch_fail_msg grep -q '^error: vecadd: cuLaunchKernel: an illegal memory access' "$tmp/out"
check cuda_fake_launch_fail_resets grep -q '^reset$' "$tmp/log2"

# A kernel the GPU default schedule cannot bind (no spatial loop) is refused
# by name; so are models.
printf '@T.prim_func\ndef main(A: T.Buffer((64,), "float32"), B: T.Buffer((1,), "float32")):\n    for k in range(64):\n        with T.block("B"):\n            vk = T.axis.reduce(64, k)\n            with T.init():\n                B[0] = T.float32(0)\n            B[0] = B[0] + A[vk]\n' >"$tmp/total.py"
"$MC" --task-file "$tmp/total.py" --target cuda --db "$tmp/none.db" -o "$tmp/t.o" 2>"$tmp/err"
check cuda_unbindable_exit1 test $? -eq 1
check cuda_unbindable_named grep -q '^mlc-compile: error: kernel total has no record for cuda -arch=sm_80: no GPU schedule for main' "$tmp/err"
check cuda_unbindable_no_object test ! -e "$tmp/t.o"
# --task-file on the CPU: the same file compiles (the symbol is the file's name).
"$MC" --task-file "$tmp/total.py" --db "$tmp/none.db" -o "$tmp/t.o" --header "$tmp/t.h" 2>"$tmp/err"
check task_file_cpu_exit test $? -eq 0 -a -s "$tmp/t.o"
check task_file_cpu_symbol grep -q '^int32_t total(void \*\*args);$' "$tmp/t.h"
"$MC" --model examples/mlp.json --target cuda -o "$tmp/m.o" 2>"$tmp/err"
check cuda_model_refused test $? -eq 2
check cuda_model_refused_msg grep -q 'models run on the CPU only' "$tmp/err"
"$MC" --task vecadd --ptx "$tmp/x.ptx" -o "$tmp/x.o" 2>"$tmp/err"
check cuda_ptx_needs_cuda test $? -eq 2

# mlc-ir run --target cuda: the same loader (targets/cuda_driver.c), the
# fake's vecadd against the host reference.
MLC_CUDA_DRIVER="$tmp/libfakecuda.so" FAKE_CUDA_LOG="$tmp/log3" FAKE_CUDA_REFERENCE=vecadd \
  "$IR" run tests/kernels/gpu/vecadd.py --target "cuda -arch=sm_80" --repeat 3 >"$tmp/out" 2>"$tmp/err"
check cuda_ir_run_fake_exit test $? -eq 0
check cuda_ir_run_fake_result grep -q '^vecadd: max error 0 vs .* on the GPU' "$tmp/out"
check cuda_ir_run_fake_launch grep -q '^launch vecadd grid=8,1,1 block=128,1,1 shared=0$' "$tmp/log3"

# The database's best record for the cuda target is the one compiled:
# mlc-tune measures vecadd through the fake driver (its C reference stands
# in for the kernel, so every candidate matches the host reference), then
# mlc-compile replays the best record for "cuda -arch=sm_80" and none for
# sm_86.
MLC_CUDA_DRIVER="$tmp/libfakecuda.so" FAKE_CUDA_REFERENCE=vecadd \
  "$B/bin/mlc-tune" --task vecadd --shape 1000 --target "cuda -arch=sm_80" --trials 8 \
  --db "$tmp/t.db" >"$tmp/out" 2>"$tmp/err"
check cuda_tune_fake_exit test $? -eq 0
"$MC" --task vecadd --shape 1000 --target "cuda -arch=sm_80" --db "$tmp/t.db" -o "$tmp/v2.o" \
  --ptx "$tmp/v2.ptx" 2>"$tmp/err"
check cuda_compile_record_exit test $? -eq 0
check cuda_compile_record_used grep -q 'vecadd .* record [0-9]' "$tmp/err"
"$MC" --task vecadd --shape 1000 --target "cuda -arch=sm_86" --db "$tmp/t.db" -o "$tmp/v3.o" \
  2>"$tmp/err"
check cuda_compile_other_arch_untuned grep -q 'vecadd .* untuned' "$tmp/err"

# tools/gpu_check.sh's program (tests/gpu_compile_check.c, run on a GPU
# only) builds against two cuda headers and objects.
"$MC" --task matmul --shape 1024,1024,1024 --target cuda --db "$tmp/none.db" -o "$tmp/mm.o" \
  --header "$tmp/mm.h" 2>"$tmp/err" &&
  "$MC" --task vecadd --shape 1048576 --target cuda --db "$tmp/none.db" -o "$tmp/va.o" \
    --header "$tmp/va.h" 2>>"$tmp/err" &&
  cc -std=gnu11 -O1 -Wall -Wextra -Werror -I. -I"$tmp" tests/gpu_compile_check.c "$tmp/va.o" \
    "$tmp/mm.o" targets/runtime/cuda_launch.c -ldl -lpthread -lm -o "$tmp/compile_check" 2>"$tmp/cc_err"
check cuda_gpu_check_program_links test $? -eq 0
