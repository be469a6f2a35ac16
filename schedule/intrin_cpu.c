/* Built-in tensor intrinsics for CPU dot-product instructions, registered
 * only for a target whose CPU has the instruction
 * (mlc_tensor_intrin_register_cpu).
 *
 * dot_16x4_u8i8i32_vnni (AVX-512 VNNI vpdpbusd; TVM's dot_16x4 layout):
 *   C[0, i] += sum_k int32(A[0, k]) * int32(B[0, 0, i, k]), i < 16, k < 4
 * over uint8 A (1, 4) (activations: one row, four reduction elements),
 * int8 B (1, 1, 16, 4) (a 16x4 tile of weights packed [N/16, K/4, 16, 4])
 * and int32 C (1, 16). The operands carry the unit leading dimensions of
 * a dense layer's A[M, K], packed B and C[M, N], because tensorize matches
 * buffers of the operand's rank. The implementation is one call to the
 * CPU builtin "mlc_x86_vpdpbusd_16x4", which the LLVM backend expands into
 * the instruction (targets/cpu_builtins.c) and which the interpreter runs
 * as vnni_dot below, so tensorized code is checked against the reference
 * on any machine.
 *
 * dot_16x4_u8i8i32_vnni_nchwc: the same instruction with the operand ranks
 * of conv2d_nchwc_int8 (tensorize matches buffers of the operand's rank):
 * uint8 A (1, 1, 1, 1, 4) (one input pixel's four channels of the NCHWc
 * block), int8 B (1, 1, 1, 1, 1, 16, 4) (the weight packed [K/16, C/cb, R,
 * S, cb/4, 16, 4]) and int32 C (1, 1, 1, 1, 16) (one output pixel's 16
 * channels).
 *
 * dot_16x2_bf16bf16f32_avx512bf16 (AVX-512 BF16 vdpbf16ps):
 *   C[0, i] += sum_k float32(A[0, k]) * float32(B[0, 0, i, k]), i < 16, k < 2
 * over bfloat16 A (1, 2), bfloat16 B (1, 1, 16, 2) (weights packed [N/16,
 * K/2, 16, 2]) and float32 C (1, 16), through the builtin
 * "mlc_x86_vdpbf16ps_16x2" (llvm.x86.avx512bf16.dpbf16ps.512). Numerics:
 * the description adds k = 0 then k = 1, each rounded to float32; the
 * instruction adds the k = 1 product first, then the k = 0 one (Intel SDM:
 * two fused multiply-adds, each rounded to nearest even, denormal inputs
 * read as zero and denormal results flushed to zero), which bf16_dot below
 * models bit for bit. The two orders differ by at most one float32
 * rounding per pair of products: the description and the hardware agree
 * within |C| * 2^-23 per accumulated pair plus the flushed denormals.
 */
#include "schedule/sched_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const char vnni_text[] =
    "@T.prim_func\n"
    "def dot_16x4_u8i8i32_vnni_desc(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 4), \"uint8\")\n"
    "    B = T.match_buffer(b, (1, 1, 16, 4), \"int8\")\n"
    "    C = T.match_buffer(c, (1, 16), \"int32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0:16], A[0, 0:4], B[0, 0, 0:16, 0:4])\n"
    "        T.writes(C[0, 0:16])\n"
    "        for i, k in T.grid(16, 4):\n"
    "            with T.block(\"update\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                C[0, vi] = C[0, vi] + T.Cast(\"int32\", A[0, vk]) * T.Cast(\"int32\", B[0, 0, vi, vk])\n"
    "\n"
    "@T.prim_func\n"
    "def dot_16x4_u8i8i32_vnni_impl(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 4), \"uint8\")\n"
    "    B = T.match_buffer(b, (1, 1, 16, 4), \"int8\")\n"
    "    C = T.match_buffer(c, (1, 16), \"int32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0:16], A[0, 0:4], B[0, 0, 0:16, 0:4])\n"
    "        T.writes(C[0, 0:16])\n"
    "        T.evaluate(T.call_extern(\"int32\", \"mlc_x86_vpdpbusd_16x4\", C.access_ptr(\"rw\"), "
    "A.access_ptr(\"r\"), B.access_ptr(\"r\"), B.strides[2]))\n";

/* The interpreter's vpdpbusd: (C, A, B, row stride of B). */
static double vnni_dot(void *ud, int n, const mlc_extern_val *args) {
  MLC_UNUSED(ud);
  if (n != 4) return -1;
  int32_t *c = args[0].p;
  const uint8_t *a = args[1].p;
  const int8_t *b = args[2].p;
  int64_t stride = args[3].i;
  for (int i = 0; i < 16; i++) {
    uint32_t acc = (uint32_t)c[i];
    for (int k = 0; k < 4; k++) acc += (uint32_t)((int32_t)a[k] * (int32_t)b[i * stride + k]);
    c[i] = (int32_t)acc;
  }
  return 0;
}

static const char vnni_nchwc_text[] =
    "@T.prim_func\n"
    "def dot_16x4_u8i8i32_vnni_nchwc_desc(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 1, 1, 1, 4), \"uint8\")\n"
    "    B = T.match_buffer(b, (1, 1, 1, 1, 1, 16, 4), \"int8\")\n"
    "    C = T.match_buffer(c, (1, 1, 1, 1, 16), \"int32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0, 0, 0, 0:16], A[0, 0, 0, 0, 0:4], B[0, 0, 0, 0, 0, 0:16, 0:4])\n"
    "        T.writes(C[0, 0, 0, 0, 0:16])\n"
    "        for i, k in T.grid(16, 4):\n"
    "            with T.block(\"update\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                C[0, 0, 0, 0, vi] = C[0, 0, 0, 0, vi] + T.Cast(\"int32\", A[0, 0, 0, 0, vk]) * "
    "T.Cast(\"int32\", B[0, 0, 0, 0, 0, vi, vk])\n"
    "\n"
    "@T.prim_func\n"
    "def dot_16x4_u8i8i32_vnni_nchwc_impl(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 1, 1, 1, 4), \"uint8\")\n"
    "    B = T.match_buffer(b, (1, 1, 1, 1, 1, 16, 4), \"int8\")\n"
    "    C = T.match_buffer(c, (1, 1, 1, 1, 16), \"int32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0, 0, 0, 0:16], A[0, 0, 0, 0, 0:4], B[0, 0, 0, 0, 0, 0:16, 0:4])\n"
    "        T.writes(C[0, 0, 0, 0, 0:16])\n"
    "        T.evaluate(T.call_extern(\"int32\", \"mlc_x86_vpdpbusd_16x4\", C.access_ptr(\"rw\"), "
    "A.access_ptr(\"r\"), B.access_ptr(\"r\"), B.strides[5]))\n";

static const char bf16_text[] =
    "@T.prim_func\n"
    "def dot_16x2_bf16bf16f32_avx512bf16_desc(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 2), \"bfloat16\")\n"
    "    B = T.match_buffer(b, (1, 1, 16, 2), \"bfloat16\")\n"
    "    C = T.match_buffer(c, (1, 16), \"float32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0:16], A[0, 0:2], B[0, 0, 0:16, 0:2])\n"
    "        T.writes(C[0, 0:16])\n"
    "        for i, k in T.grid(16, 2):\n"
    "            with T.block(\"update\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                C[0, vi] = C[0, vi] + T.Cast(\"float32\", A[0, vk]) * T.Cast(\"float32\", B[0, 0, vi, vk])\n"
    "\n"
    "@T.prim_func\n"
    "def dot_16x2_bf16bf16f32_avx512bf16_impl(a: T.handle, b: T.handle, c: T.handle):\n"
    "    A = T.match_buffer(a, (1, 2), \"bfloat16\")\n"
    "    B = T.match_buffer(b, (1, 1, 16, 2), \"bfloat16\")\n"
    "    C = T.match_buffer(c, (1, 16), \"float32\")\n"
    "    with T.block(\"root\"):\n"
    "        T.reads(C[0, 0:16], A[0, 0:2], B[0, 0, 0:16, 0:2])\n"
    "        T.writes(C[0, 0:16])\n"
    "        T.evaluate(T.call_extern(\"int32\", \"mlc_x86_vdpbf16ps_16x2\", C.access_ptr(\"rw\"), "
    "A.access_ptr(\"r\"), B.access_ptr(\"r\"), B.strides[2]))\n";

/* float32 with a denormal read or written as zero of its sign
 * (vdpbf16ps's DAZ and FTZ). */
static float flush_denormal(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

/* The interpreter's vdpbf16ps: (C, A, B, row stride of B), bit for bit
 * (NaN payloads aside; checked against the instruction by test_bf16):
 * per lane the odd pair's product added first, then the even one's, each
 * as a fused multiply-add rounded to float32. */
static double bf16_dot(void *ud, int n, const mlc_extern_val *args) {
  MLC_UNUSED(ud);
  if (n != 4) return -1;
  float *c = args[0].p;
  const uint16_t *a = args[1].p, *b = args[2].p;
  int64_t stride = args[3].i;
  float a0 = flush_denormal(mlc_bf16_to_float(a[0])), a1 = flush_denormal(mlc_bf16_to_float(a[1]));
  for (int i = 0; i < 16; i++) {
    float b0 = flush_denormal(mlc_bf16_to_float(b[i * stride]));
    float b1 = flush_denormal(mlc_bf16_to_float(b[i * stride + 1]));
    /* fused: a product beyond float32's range must not overflow alone */
    float acc = flush_denormal(fmaf(a1, b1, flush_denormal(c[i])));
    acc = flush_denormal(fmaf(a0, b0, acc));
    c[i] = acc;
  }
  return 0;
}

typedef struct cpu_intrin {
  const char *feature; /* LLVM feature name */
  const char *text;    /* NAME_desc / NAME_impl pairs */
  const char *ext;     /* the builtin the implementation calls ... */
  mlc_extern_fn fn;    /* ... and the interpreter's version of it */
} cpu_intrin;

static const cpu_intrin cpu_intrins[] = {
    {"avx512vnni", vnni_text, "mlc_x86_vpdpbusd_16x4", vnni_dot},
    {"avx512vnni", vnni_nchwc_text, "mlc_x86_vpdpbusd_16x4", vnni_dot},
    {"avx512bf16", bf16_text, "mlc_x86_vdpbf16ps_16x2", bf16_dot},
};

/* Whether a comma-separated LLVM feature list turns `f` on (the last item
 * naming it wins). */
static bool has_feature(const char *list, const char *f) {
  size_t n = strlen(f);
  bool on = false;
  for (const char *p = list; (p = strstr(p, f)) != NULL; p += n) {
    bool item = p > list && (p[-1] == '+' || p[-1] == '-') && (p == list + 1 || p[-2] == ',');
    if (item && (p[n] == ',' || p[n] == 0)) on = p[-1] == '+';
  }
  return on;
}

bool mlc_tensor_intrin_register_cpu(const char *features, int *n_added, mlc_error *err) {
  int total = 0;
  for (int i = 0; i < MLC_COUNTOF(cpu_intrins); i++) {
    const cpu_intrin *ci = &cpu_intrins[i];
    if (!has_feature(features, ci->feature)) continue;
    if (!mlc_interp_register_extern(ci->ext, ci->fn, NULL))
      return mlc_error_set(err, "cannot register %s with the interpreter", ci->ext);
    int n = 0;
    if (!mlc_tensor_intrin_register_text("<built-in CPU intrinsics>", ci->text, &n, err)) return false;
    total += n;
  }
  if (n_added) *n_added = total;
  return true;
}
