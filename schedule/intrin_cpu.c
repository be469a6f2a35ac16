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
 * the instruction (targets/llvm_builtins.c) and which the interpreter runs
 * as vnni_dot below, so tensorized code is checked against the reference
 * on any machine.
 *
 * dense_u8i8i32_vnni_<R>x<C>x<K> (a family, generated on demand for each
 * tile shape the tuner samples): a register-blocked micro-kernel,
 *   C[i, j] += sum_k int32(A[i, k]) * int32(B[j / 16, k / 4, j % 16, k % 4])
 * over i < R rows, j < C columns (C = 16 * NB, NB column blocks of 16
 * lanes) and k < K, for uint8 A (R, K), int8 B (NB, K / 4, 16, 4) packed
 * as dense_int8's weights and int32 C (R, C). Its implementation calls
 * "mlc_x86_vpdpbusd_block", which the LLVM backend expands into a loop
 * over K / 4 that keeps the R x NB accumulators in registers (loaded once,
 * stored once: the one-call-per-step intrinsic above loads and stores C
 * around every vpdpbusd) and the interpreter runs as vnni_block below.
 *
 * dense_u8i8i32_amx_<R>x<C>x<K> (a family, for a CPU with AMX int8): the
 * same computation on 16 x 16 int32 tiles, R and C 16 or 32 and K a
 * multiple of 64, through "mlc_x86_tdpbusd_block" (tileloadd / tdpbusd /
 * tilestored; the interpreter runs it as vnni_block too).
 *
 * dense_bf16bf16f32_amx_<R>x<C>x<K> (a family, for a CPU with AMX
 * BF16): the bfloat16 micro-kernel below on 16 x 16 float32 tiles, R and
 * C 16 or 32, K a multiple of 32, through "mlc_x86_tdpbf16ps_block"
 * (tileloadd / tdpbf16ps / tilestored). The instruction sums each tile
 * step's products in an order of its own (Intel's manuals give two), so
 * the interpreter's bf16_block, the AVX-512 BF16 order, agrees with it
 * within the float32 summation bound K * 2^-23 * sum |a b|, not bit for
 * bit.
 *
 * <family>_init_<R>x<C>x<K> (for each of the families above and
 * below): the same tile with the block's init, C = 0 before the sum, for a
 * block whose whole reduction is in the tile; its description's root
 * opens with `with T.init():` (tensorize then takes the block with its
 * init, no decompose_reduction), its implementation calls the builtin's
 * _init variant, which zeroes the accumulators in registers instead of
 * loading C. On AMX that is what makes the kernel fast: tile loads of
 * accumulators just stored as zeros (the decomposed init) stall; a
 * hand-written 1024^3 AMX product took 1.5x the time with them (0.95 vs
 * 0.63 ms, 2 threads, this project's Sapphire Rapids-class machine).
 *
 * dense_bf16bf16f32_avx512bf16_<R>x<C>x<K> (a family, for a CPU with
 * AVX-512 BF16): the same micro-kernel over bfloat16 A (R, K), bfloat16 B
 * (NB, K / 2, 16, 2) packed as matmul_bf16's weights and float32 C (R, C),
 * K a multiple of 2, through "mlc_x86_vdpbf16ps_block" (one vdpbf16ps
 * per accumulator and K pair, the accumulators in registers); the
 * interpreter runs it as bf16_block, the instruction's numerics per K
 * pair in order (see dot_16x2 below), so the two agree bit for bit.
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
#include <stdio.h>
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

/* The interpreter's micro-kernel: (C, A, B, C row stride, A row stride,
 * B's strides over column blocks, K steps and lanes, R, NB, K). */
static double vnni_block(void *ud, int n, const mlc_extern_val *args) {
  MLC_UNUSED(ud);
  if (n != 11) return -1;
  int32_t *c = args[0].p;
  const uint8_t *a = args[1].p;
  const int8_t *b = args[2].p;
  int64_t sc = args[3].i, sa = args[4].i, sb0 = args[5].i, sb1 = args[6].i, sb2 = args[7].i;
  int64_t rows = args[8].i, nb = args[9].i, kb = args[10].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < nb * 16; j++) {
      uint32_t acc = (uint32_t)c[r * sc + j];
      for (int64_t k = 0; k < kb; k++) {
        int8_t w = b[(j / 16) * sb0 + (k / 4) * sb1 + (j % 16) * sb2 + k % 4];
        acc += (uint32_t)((int32_t)a[r * sa + k] * (int32_t)w);
      }
      c[r * sc + j] = (int32_t)acc;
    }
  return 0;
}

/* A family of micro-kernels: the shapes it takes (rows and K multiples of
 * row_step and k_step, columns of 16, bounded; at most max_tiles AMX tile
 * registers when nonzero: R/16 x C/16 accumulators and R/16 + C/16
 * operands) and the builtin its implementation calls. */
typedef struct block_family {
  const char *prefix, *builtin;
  int64_t row_step, max_rows, max_cols, k_step, max_k, max_tiles;
  int64_t group;                    /* K elements per lane of one step: B's innermost extent */
  const char *a_dt, *b_dt, *c_dt;   /* operand dtypes (A and B cast to C's) */
} block_family;

static const block_family VNNI_FAMILY = {"dense_u8i8i32_vnni", "mlc_x86_vpdpbusd_block", 1, 16, 128, 4, 4096, 0,
                                         4, "uint8", "int8", "int32"};
static const block_family AMX_FAMILY = {"dense_u8i8i32_amx", "mlc_x86_tdpbusd_block", 16, 32, 32, 64, 4096, 8,
                                        4, "uint8", "int8", "int32"};
static const block_family BF16_FAMILY = {"dense_bf16bf16f32_avx512bf16", "mlc_x86_vdpbf16ps_block", 1, 16, 128,
                                         2, 4096, 0, 2, "bfloat16", "bfloat16", "float32"};
static const block_family AMX_BF16_FAMILY = {"dense_bf16bf16f32_amx", "mlc_x86_tdpbf16ps_block", 16, 32, 32, 32,
                                             4096, 8, 2, "bfloat16", "bfloat16", "float32"};

static bool parse_block_shape(const block_family *fm, const char *suffix, int64_t *r, int64_t *c,
                              int64_t *k) {
  char tail;
  long long x, y, z;
  if (sscanf(suffix, "%lldx%lldx%lld%c", &x, &y, &z, &tail) != 3) return false;
  *r = x, *c = y, *k = z;
  if (x < 1 || x > fm->max_rows || x % fm->row_step || y < 16 || y > fm->max_cols || y % 16 ||
      z < fm->k_step || z > fm->max_k || z % fm->k_step)
    return false;
  if (fm->max_tiles && (x / 16) * (y / 16) + x / 16 + y / 16 > fm->max_tiles) return false;
  /* one spelling per shape: no leading zeros or signs */
  char canon[64];
  snprintf(canon, sizeof canon, "%lldx%lldx%lld", x, y, z);
  return strcmp(canon, suffix) == 0;
}

/* The pair of member <prefix>[_init]_<suffix>; `init`: the description
 * computes the block's init too (C = 0 first, as the whole reduction is
 * in the tile) and the implementation calls the builtin's _init variant,
 * which starts from zeroed accumulators instead of loading C. */
static bool block_text(const block_family *fm, bool init, const char *suffix, mlc_str *t) {
  int64_t r, c, k;
  if (!parse_block_shape(fm, suffix, &r, &c, &k)) return false;
  const char *name = fm->prefix, *ad = fm->a_dt, *bd = fm->b_dt, *cd = fm->c_dt, *mid = init ? "_init" : "";
  long long R = r, C = c, K = k, NB = c / 16, G = fm->group, KG = k / fm->group;
  for (int impl = 0; impl < 2; impl++) {
    mlc_str_printf(t,
                   "@T.prim_func\n"
                   "def %s%s_%s_%s(a: T.handle, b: T.handle, c: T.handle):\n"
                   "    A = T.match_buffer(a, (%lld, %lld), \"%s\")\n"
                   "    B = T.match_buffer(b, (%lld, %lld, 16, %lld), \"%s\")\n"
                   "    C = T.match_buffer(c, (%lld, %lld), \"%s\")\n"
                   "    with T.block(\"root\"):\n"
                   "        T.reads(C[0:%lld, 0:%lld], A[0:%lld, 0:%lld], B[0:%lld, 0:%lld, 0:16, 0:%lld])\n"
                   "        T.writes(C[0:%lld, 0:%lld])\n",
                   name, mid, suffix, impl ? "impl" : "desc", R, K, ad, NB, KG, G, bd, R, C, cd, R, C, R, K,
                   NB, KG, G, R, C);
    if (init && !impl && R > 1)
      mlc_str_printf(t,
                     "        with T.init():\n"
                     "            for i, j in T.grid(%lld, %lld):\n"
                     "                with T.block(\"init\"):\n"
                     "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                     "                    C[vi, vj] = T.%s(0)\n",
                     R, C, cd);
    else if (init && !impl) /* blockize leaves no unit row loop in the init */
      mlc_str_printf(t,
                     "        with T.init():\n"
                     "            for j in range(%lld):\n"
                     "                with T.block(\"init\"):\n"
                     "                    vj = T.axis.spatial(%lld, j)\n"
                     "                    C[0, vj] = T.%s(0)\n",
                     C, C, cd);
    if (impl)
      mlc_str_printf(t,
                     "        T.evaluate(T.call_extern(\"int32\", \"%s%s\", "
                     "C.access_ptr(\"%s\"), A.access_ptr(\"r\"), B.access_ptr(\"r\"), C.strides[0], "
                     "A.strides[0], B.strides[0], B.strides[1], B.strides[2], %lld, %lld, %lld))\n\n",
                     fm->builtin, mid, init ? "w" : "rw", R, NB, K);
    else if (R > 1)
      mlc_str_printf(t,
                     "        for i, j, k in T.grid(%lld, %lld, %lld):\n"
                     "            with T.block(\"update\"):\n"
                     "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
                     "                C[vi, vj] = C[vi, vj] + T.Cast(\"%s\", A[vi, vk]) * "
                     "T.Cast(\"%s\", B[vj // 16, vk // %lld, vj %% 16, vk %% %lld])\n\n",
                     R, C, K, cd, cd, G, G);
    else /* blockize keeps no iterator for a unit loop: the row is 0 */
      mlc_str_printf(t,
                     "        for i, j, k in T.grid(1, %lld, %lld):\n"
                     "            with T.block(\"update\"):\n"
                     "                vj, vk = T.axis.remap(\"SR\", [j, k])\n"
                     "                C[0, vj] = C[0, vj] + T.Cast(\"%s\", A[0, vk]) * "
                     "T.Cast(\"%s\", B[vj // 16, vk // %lld, vj %% 16, vk %% %lld])\n\n",
                     C, K, cd, cd, G, G);
  }
  return true;
}

static bool vnni_block_text(const char *suffix, mlc_str *t) { return block_text(&VNNI_FAMILY, false, suffix, t); }
static bool amx_block_text(const char *suffix, mlc_str *t) { return block_text(&AMX_FAMILY, false, suffix, t); }
static bool bf16_block_text(const char *suffix, mlc_str *t) { return block_text(&BF16_FAMILY, false, suffix, t); }
static bool vnni_init_text(const char *suffix, mlc_str *t) { return block_text(&VNNI_FAMILY, true, suffix, t); }
static bool amx_init_text(const char *suffix, mlc_str *t) { return block_text(&AMX_FAMILY, true, suffix, t); }
static bool bf16_init_text(const char *suffix, mlc_str *t) { return block_text(&BF16_FAMILY, true, suffix, t); }
static bool amx_bf16_text(const char *suffix, mlc_str *t) { return block_text(&AMX_BF16_FAMILY, false, suffix, t); }
static bool amx_bf16_init_text(const char *suffix, mlc_str *t) {
  return block_text(&AMX_BF16_FAMILY, true, suffix, t);
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

/* vdpbf16ps on one lane: c + a1 * b1, then + a0 * b0, each a fused
 * multiply-add rounded to float32 (a product beyond float32's range must
 * not overflow alone), denormal inputs and results flushed. */
static float bf16_pair(float c, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  float x0 = flush_denormal(mlc_bf16_to_float(a0)), x1 = flush_denormal(mlc_bf16_to_float(a1));
  float y0 = flush_denormal(mlc_bf16_to_float(b0)), y1 = flush_denormal(mlc_bf16_to_float(b1));
  float acc = flush_denormal(fmaf(x1, y1, flush_denormal(c)));
  return flush_denormal(fmaf(x0, y0, acc));
}

/* The interpreter's vdpbf16ps: (C, A, B, row stride of B), bit for bit
 * (NaN payloads aside; checked against the instruction by test_bf16). */
static double bf16_dot(void *ud, int n, const mlc_extern_val *args) {
  MLC_UNUSED(ud);
  if (n != 4) return -1;
  float *c = args[0].p;
  const uint16_t *a = args[1].p, *b = args[2].p;
  int64_t stride = args[3].i;
  for (int i = 0; i < 16; i++) c[i] = bf16_pair(c[i], a[0], a[1], b[i * stride], b[i * stride + 1]);
  return 0;
}

/* The interpreter's bfloat16 micro-kernel, with vnni_block's arguments:
 * per output, one vdpbf16ps step per K pair in order, as the compiled
 * loop runs them, so the two agree bit for bit. */
static double bf16_block(void *ud, int n, const mlc_extern_val *args) {
  MLC_UNUSED(ud);
  if (n != 11) return -1;
  float *c = args[0].p;
  const uint16_t *a = args[1].p, *b = args[2].p;
  int64_t sc = args[3].i, sa = args[4].i, sb0 = args[5].i, sb1 = args[6].i, sb2 = args[7].i;
  int64_t rows = args[8].i, nb = args[9].i, kb = args[10].i;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < nb * 16; j++) {
      float acc = c[r * sc + j];
      for (int64_t k = 0; k < kb; k += 2) {
        const uint16_t *w = b + (j / 16) * sb0 + (k / 2) * sb1 + (j % 16) * sb2, *x = a + r * sa + k;
        acc = bf16_pair(acc, x[0], x[1], w[0], w[1]);
      }
      c[r * sc + j] = acc;
    }
  return 0;
}

/* The _init builtins' C: rows x NB * 16 accumulators zeroed, then the
 * micro-kernel (arguments as vnni_block's). */
static void zero_c(const mlc_extern_val *args, size_t elem) {
  char *c = args[0].p;
  for (int64_t r = 0; r < args[8].i; r++) memset(c + (size_t)(r * args[3].i) * elem, 0, (size_t)(args[9].i * 16) * elem);
}

static double vnni_block_init(void *ud, int n, const mlc_extern_val *args) {
  if (n != 11) return -1;
  zero_c(args, sizeof(int32_t));
  return vnni_block(ud, n, args);
}

static double bf16_block_init(void *ud, int n, const mlc_extern_val *args) {
  if (n != 11) return -1;
  zero_c(args, sizeof(float));
  return bf16_block(ud, n, args);
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

/* Families generated on demand (sched_intrin_add_family). */
static const struct {
  const char *feature, *prefix, *ext;
  sched_intrin_gen gen;
  mlc_extern_fn fn;
} cpu_families[] = {
    {"avx512vnni", "dense_u8i8i32_vnni", "mlc_x86_vpdpbusd_block", vnni_block_text, vnni_block},
    {"amx-int8", "dense_u8i8i32_amx", "mlc_x86_tdpbusd_block", amx_block_text, vnni_block},
    {"avx512bf16", "dense_bf16bf16f32_avx512bf16", "mlc_x86_vdpbf16ps_block", bf16_block_text, bf16_block},
    {"avx512vnni", "dense_u8i8i32_vnni_init", "mlc_x86_vpdpbusd_block_init", vnni_init_text, vnni_block_init},
    {"amx-int8", "dense_u8i8i32_amx_init", "mlc_x86_tdpbusd_block_init", amx_init_text, vnni_block_init},
    {"avx512bf16", "dense_bf16bf16f32_avx512bf16_init", "mlc_x86_vdpbf16ps_block_init", bf16_init_text,
     bf16_block_init},
    {"amx-bf16", "dense_bf16bf16f32_amx", "mlc_x86_tdpbf16ps_block", amx_bf16_text, bf16_block},
    {"amx-bf16", "dense_bf16bf16f32_amx_init", "mlc_x86_tdpbf16ps_block_init", amx_bf16_init_text,
     bf16_block_init},
};

bool mlc_tensor_intrin_register_cpu(const char *features, int *n_added, mlc_error *err) {
  int total = 0;
  for (int i = 0; i < MLC_COUNTOF(cpu_intrins); i++) {
    const cpu_intrin *ci = &cpu_intrins[i];
    if (!mlc_feature_list_has(features, ci->feature)) continue;
    if (!mlc_interp_register_extern(ci->ext, ci->fn, NULL))
      return mlc_error_set(err, "cannot register %s with the interpreter", ci->ext);
    int n = 0;
    if (!mlc_tensor_intrin_register_text("<built-in CPU intrinsics>", ci->text, &n, err)) return false;
    total += n;
  }
  for (int i = 0; i < MLC_COUNTOF(cpu_families); i++) {
    if (!mlc_feature_list_has(features, cpu_families[i].feature)) continue;
    if (!mlc_interp_register_extern(cpu_families[i].ext, cpu_families[i].fn, NULL))
      return mlc_error_set(err, "cannot register %s with the interpreter", cpu_families[i].ext);
    if (!sched_intrin_add_family(cpu_families[i].prefix, cpu_families[i].gen))
      return mlc_error_set(err, "cannot register the intrinsic family %s", cpu_families[i].prefix);
  }
  if (n_added) *n_added = total;
  return true;
}
