/* AVX-512 BF16 and the int8 convolution through tensorize:
 *  - matmul_bf16 (bfloat16 x bfloat16 -> float32, weights packed [N/16,
 *    K/2, 16, 2]) tiled around dot_16x2_bf16bf16f32_avx512bf16, checked
 *    against a double-precision C sum of the same bfloat16 inputs within
 *    the float32 summation bound K * 2^-23 * sum |a b| (both orders of
 *    summation lie within (K - 1) * 2^-24 * sum |a b| of the exact sum);
 *  - the interpreter's model of vdpbf16ps against the instruction, bit for
 *    bit, denormals included;
 *  - the register-blocked micro-kernel family
 *    dense_bf16bf16f32_avx512bf16_<R>x<C>x<K> (mlc_x86_vdpbf16ps_block):
 *    within the bound interpreted, compiled equal bit for bit to the
 *    interpreter's model for several shapes, refused for shapes outside
 *    the family and targets without the feature, sampled by the design
 *    space (traces round-tripping through JSON) and timed against the
 *    one-instruction intrinsic and the float32 matmul;
 *  - the AMX BF16 family dense_bf16bf16f32_amx_<R>x<C>x<K> (tdpbf16ps):
 *    within the bound interpreted and compiled, refused beyond its shapes
 *    and for targets without amx-bf16, sampled by the design space;
 *  - conv2d_nchwc_int8 (uint8 NCHWc data, int8 weights packed [K/16, C/c,
 *    R, S, c/4, 16, 4]) tiled around dot_16x4_u8i8i32_vnni_nchwc, exact
 *    against a plain C convolution;
 *  - every design-space sample of both tasks tensorized and right, the
 *    intrinsics registered only for feature lists that have them, targets
 *    without the feature refused, shapes the packing cannot take refused.
 * Interpreted checks need the intrinsic registered (which follows the
 * host's features, as tuning does); compiled ones need the host CPU to
 * have the instruction (SKIP otherwise). */
#include "costmodel/costmodel_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/jit_util.h"
#include "tests/sched_util.h"
#include "tests/test.h"
#include "tuner/tuner_internal.h"

#include <math.h>

static const char *BF16 = "dot_16x2_bf16bf16f32_avx512bf16";
static const char *CONV = "dot_16x4_u8i8i32_vnni_nchwc";
static bool have_bf16, have_vnni;

static mlc_prim_func *task(mlc_arena *a, const char *name, const int64_t *shape) {
  const mlc_task_def *d = mlc_task_find(name);
  MLC_ASSERT(d);
  return mlc_task_build(a, d, shape);
}

static void alloc_args(const mlc_prim_func *f, mlc_array *args) {
  for (int i = 0; i < 3; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    args[i] = *x;
    mlc_free(x);
  }
}

static void free_args(mlc_array *args) {
  for (int i = 0; i < 3; i++) mlc_free(args[i].data);
}

/* ---- matmul_bf16 ------------------------------------------------------------- */

/* A and B uniform in [-1, 1) rounded to bfloat16; C garbage (the init
 * must overwrite it). */
static void fill_bf16(const mlc_prim_func *f, mlc_array *args, uint64_t seed) {
  alloc_args(f, args);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 3);
  for (int i = 0; i < 3; i++) {
    int64_t n = mlc_array_numel(&args[i]);
    for (int64_t e = 0; e < n; e++)
      mlc_array_set(&args[i], e, i < 2 ? (double)mlc_pcg32_next(&rng) / 2147483648.0 - 1.0 : 1e30);
  }
}

/* The exact sum in double and sum |a b| per output. */
static void bf16_reference(const mlc_array *args, double *c, double *mag) {
  int64_t m = args[0].shape[0], k = args[0].shape[1], n = args[2].shape[1];
  const uint16_t *A = args[0].data, *B = args[1].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0, g = 0;
      for (int64_t r = 0; r < k; r++) {
        double p = (double)mlc_bf16_to_float(A[i * k + r]) *
                   mlc_bf16_to_float(B[((j / 16) * (k / 2) + r / 2) * 32 + (j % 16) * 2 + r % 2]);
        s += p;
        g += fabs(p);
      }
      c[i * n + j] = s;
      mag[i * n + j] = g;
    }
}

/* Outputs outside the float32 summation bound. */
static int bf16_wrong(const mlc_array *args, double *worst) {
  int64_t numel = mlc_array_numel(&args[2]), k = args[0].shape[1];
  double *want = mlc_xmalloc(sizeof(double) * (size_t)numel);
  double *mag = mlc_xmalloc(sizeof(double) * (size_t)numel);
  bf16_reference(args, want, mag);
  int bad = 0;
  *worst = 0;
  for (int64_t e = 0; e < numel; e++) {
    double d = fabs(((float *)args[2].data)[e] - want[e]), tol = (double)k * 0x1p-23 * mag[e];
    bad += !(d <= tol);
    if (mag[e] > 0 && d / mag[e] > *worst) *worst = d / mag[e];
  }
  mlc_free(want);
  mlc_free(mag);
  return bad;
}

/* i, j / 16, k / 2, then the 16 x 2 tile; the init split off above the
 * reduction; the tile tensorized unless `plain`. */
static bool schedule_bf16(mlc_sched *s, int64_t tile_n, bool plain, mlc_error *err) {
  mlc_rv b, *l, j[2], k[2], init;
  if (!mlc_sched_get_block(s, "C", "main", &b, err) || mlc_sched_get_loops(s, b, &l, err) != 3)
    return false;
  mlc_rv i = l[0], lj = l[1], lk = l[2];
  mlc_operand fj[2] = {MLC_OP_NONE, MLC_OP_INT(tile_n)}, fk[2] = {MLC_OP_NONE, MLC_OP_INT(2)};
  if (!mlc_sched_split(s, lj, 2, fj, true, j, err) || !mlc_sched_split(s, lk, 2, fk, true, k, err) ||
      !mlc_sched_reorder(s, 5, (mlc_rv[]){i, j[0], k[0], j[1], k[1]}, err) ||
      !mlc_sched_decompose_reduction(s, b, k[0], &init, err))
    return false;
  return plain || mlc_sched_tensorize(s, j[1], BF16, err);
}

static void test_register(void) {
  mlc_error err;
  int n = -1;
  /* another CPU's list registers neither (the registry is process-wide,
   * so this runs first) */
  CHECK_MSG(mlc_tensor_intrin_register_cpu("+avx512f,-avx512bf16,-avx512vnni", &n, &err), "%s", err.msg);
  CHECK(n == 0 && !mlc_tensor_intrin_exists(BF16) && !mlc_tensor_intrin_exists(CONV));
  CHECK(!mlc_tensor_intrin_exists("dense_bf16bf16f32_avx512bf16_1x16x2"));
  CHECK(mlc_tensor_intrin_register_cpu("+avx512bf16x,+xavx512bf16", &n, &err) && n == 0);
  mlc_target host;
  mlc_target_host(&host);
  CHECK_MSG(mlc_tensor_intrin_register_cpu(mlc_target_cpu_features(&host), &n, &err), "%s", err.msg);
  have_bf16 = mlc_target_has_feature(&host, "avx512bf16");
  have_vnni = mlc_target_has_feature(&host, "avx512vnni");
  CHECK(n == (have_bf16 ? 1 : 0) + (have_vnni ? 2 : 0));
  CHECK(mlc_tensor_intrin_exists(BF16) == have_bf16 && mlc_tensor_intrin_exists(CONV) == have_vnni);
  CHECK(mlc_tensor_intrin_exists("dense_bf16bf16f32_avx512bf16_14x32x512") == have_bf16);
  if (!have_bf16) printf("SKIP BF16 tests: the host CPU (%s) lacks avx512bf16\n", host.mcpu);
  if (!have_vnni) printf("SKIP VNNI conv tests: the host CPU (%s) lacks avx512vnni\n", host.mcpu);
}

/* Tensorized and interpreted: within the bound; the call in the IR. */
static void test_bf16_interp(void) {
  if (!have_bf16) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){3, 48, 24});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK_MSG(schedule_bf16(s, 16, false, &err), "%s", err.msg);
  mlc_str text = {0};
  mlc_print_func(&text, mlc_sched_func(s));
  CHECK_MSG(strstr(text.data, "\"mlc_x86_vdpbf16ps_16x2\"") && !strstr(text.data, "T.Cast(\"float32\", A["),
            "%s", text.data);
  mlc_str_free(&text);
  mlc_array args[3];
  fill_bf16(f, args, 5);
  CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
  double worst;
  int bad = bf16_wrong(args, &worst);
  CHECK_MSG(bad == 0, "%d outputs outside the bound (worst relative %g)", bad, worst);
  free_args(args);
  /* the description's order (the unscheduled task) within the same bound */
  fill_bf16(f, args, 5);
  CHECK_MSG(mlc_interp_run(f, args, &err), "%s", err.msg);
  bad = bf16_wrong(args, &worst);
  CHECK_MSG(bad == 0, "unscheduled: %d outputs outside the bound (worst relative %g)", bad, worst);
  free_args(args);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void test_bf16_refusals(void) {
  if (!have_bf16) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){2, 32, 16});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK(!schedule_bf16(s, 8, false, &err));
  CHECK_MSG(strstr(err.msg, "mismatch") != NULL, "%s", err.msg);
  /* the int8 intrinsic does not fit bfloat16 operands */
  mlc_sched *t = mlc_sched_new(f, 1);
  mlc_rv b, *l, j[2], k[2];
  mlc_operand fj[2] = {MLC_OP_NONE, MLC_OP_INT(16)}, fk[2] = {MLC_OP_NONE, MLC_OP_INT(4)};
  bool ok = mlc_sched_get_block(t, "C", NULL, &b, &err) && mlc_sched_get_loops(t, b, &l, &err) == 3;
  mlc_rv i = l[0], lj = l[1], lk = l[2];
  ok = ok && mlc_sched_split(t, lj, 2, fj, true, j, &err) && mlc_sched_split(t, lk, 2, fk, true, k, &err) &&
       mlc_sched_reorder(t, 5, (mlc_rv[]){i, j[0], k[0], j[1], k[1]}, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_str before = {0}, after = {0};
  mlc_print_func(&before, mlc_sched_func(t));
  if (have_vnni) {
    CHECK(!mlc_sched_tensorize(t, j[1], "dot_16x4_u8i8i32_vnni", &err));
    mlc_print_func(&after, mlc_sched_func(t));
    CHECK_STREQ(before.data, after.data);
  }
  mlc_str_free(&before);
  mlc_str_free(&after);
  mlc_sched_free(t);
  mlc_sched_free(s);
  /* shapes the packed tile cannot take */
  const mlc_task_def *d = mlc_task_find("matmul_bf16");
  int64_t shape[MLC_TASK_MAX_DIMS];
  CHECK(!mlc_task_parse_shape(d, "4,20,8", shape, &err));
  CHECK_MSG(strstr(err.msg, "multiple of 16") != NULL, "%s", err.msg);
  CHECK(!mlc_task_parse_shape(d, "4,32,7", shape, &err));
  CHECK(mlc_task_parse_shape(d, "4,32,8", shape, &err));
  mlc_arena_free(a);
}

/* bfloat16 bits the instruction's corners hit: cancellation, values
 * whose products round differently by order, denormals, zeros of both
 * signs, large values. */
static uint16_t corner_bits(mlc_pcg32 *rng) {
  static const uint16_t corners[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x3f80, 0xbf80,
                                     0x4b80, 0xcb80, 0x7f7f, 0x3401, 0x1f80, 0x0040};
  uint32_t r = mlc_pcg32_next(rng);
  if (r % 4 == 0) return corners[(r >> 8) % MLC_COUNTOF(corners)];
  /* exponents near 127 so that products of 1.x * 1.y cancel and round */
  return (uint16_t)(((r >> 16) & 0x8000) | (0x3c00 + ((r >> 4) & 0x07ff)));
}

/* Compiled: the instruction in the IR; the interpreter's model of it
 * equal bit for bit (corner values too); the untensorized schedule (the
 * description's order) within the bound; the time against it. */
static void test_bf16_compiled(void) {
  if (!have_bf16) return;
  int64_t M = 64, N = 256, K = 256;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  mlc_sched *sv = mlc_sched_new(f, 1), *sp = mlc_sched_new(f, 1);
  mlc_error err;
  bool ok = schedule_bf16(sv, 16, false, &err) && schedule_bf16(sp, 16, true, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_str ir = {0};
  mlc_jit_lib *lv = ok ? build("llvm", mlc_sched_func(sv), "mm_bf16", &ir, &err) : NULL;
  CHECK_MSG(lv != NULL, "%s", err.msg);
  CHECK_MSG(!lv || strstr(ir.data, "llvm.x86.avx512bf16.dpbf16ps.512"), "no vdpbf16ps in the IR");
  mlc_str_free(&ir);
  mlc_jit_lib *lp = lv ? build("llvm", mlc_sched_func(sp), "mm_bf16_plain", NULL, &err) : NULL;
  mlc_kernel_fn fv = lv ? mlc_jit_lookup(lv, "mm_bf16", &err) : NULL;
  mlc_kernel_fn fp = lp ? mlc_jit_lookup(lp, "mm_bf16_plain", &err) : NULL;
  CHECK_MSG(!lv || (fv && fp), "%s", err.msg);
  if (fv && fp) {
    mlc_array args[3], model;
    fill_bf16(f, args, 9);
    double worst;
    CHECK(mlc_kernel_call(fv, 3, args) == 0);
    int bad = bf16_wrong(args, &worst);
    CHECK_MSG(bad == 0, "vdpbf16ps: %d outputs outside the bound (worst relative %g)", bad, worst);
    printf("# matmul_bf16 %lldx%lldx%lld: vdpbf16ps vs the exact sum, worst |d| / sum|ab| = %.3g "
           "(bound K * 2^-23 = %.3g)\n", (long long)M, (long long)N, (long long)K, worst, K * 0x1p-23);
    CHECK(mlc_kernel_call(fp, 3, args) == 0);
    bad = bf16_wrong(args, &worst);
    CHECK_MSG(bad == 0, "plain: %d outputs outside the bound", bad);
    double tv = best_time(fv, args, 5), tp = best_time(fp, args, 5), ops = 2.0 * (double)(M * N * K);
    printf("# matmul_bf16 %lldx%lldx%lld, one thread, best of 5: tensorized (vdpbf16ps) %.3f ms "
           "(%.1f GFLOP/s), same tiling untensorized %.3f ms (%.1f GFLOP/s)\n",
           (long long)M, (long long)N, (long long)K, tv * 1e3, ops / tv * 1e-9, tp * 1e3,
           ops / tp * 1e-9);
    /* corners: hardware and the interpreter's model, bit for bit */
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 77, 1);
    for (int i = 0; i < 2; i++)
      for (int64_t e = 0; e < mlc_array_numel(&args[i]); e++) ((uint16_t *)args[i].data)[e] = corner_bits(&rng);
    model = args[2];
    model.data = mlc_xmalloc(sizeof(float) * (size_t)(M * N));
    mlc_array margs[3] = {args[0], args[1], model};
    CHECK(mlc_kernel_call(fv, 3, args) == 0);
    CHECK_MSG(mlc_interp_run(mlc_sched_func(sv), margs, &err), "%s", err.msg);
    int differ = 0, nans = 0;
    for (int64_t e = 0; e < M * N; e++) {
      nans += isnan(((float *)args[2].data)[e]);
      uint32_t x, y;
      memcpy(&x, (float *)args[2].data + e, 4);
      memcpy(&y, (float *)model.data + e, 4);
      differ += x != y && !(isnan(((float *)args[2].data)[e]) && isnan(((float *)model.data)[e]));
    }
    CHECK_MSG(differ == 0, "%d of %lld outputs differ from the interpreter's vdpbf16ps", differ,
              (long long)(M * N));
    CHECK_MSG(nans < M * N / 2, "%d of %lld outputs NaN: the comparison says little", nans, (long long)(M * N));
    mlc_free(model.data);
    free_args(args);
  }
  mlc_jit_unload(lv);
  mlc_jit_unload(lp);
  mlc_sched_free(sv);
  mlc_sched_free(sp);
  mlc_arena_free(a);
}

static void test_bf16_target_without(void) {
  if (!have_bf16) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){2, 16, 8});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK_MSG(schedule_bf16(s, 16, false, &err), "%s", err.msg);
  mlc_jit_lib *lib = build("llvm -mcpu=icelake-server -mattr=+avx512f,+avx512vnni,-avx512bf16",
                           mlc_sched_func(s), "mm_nobf16", NULL, &err);
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "needs the CPU feature +avx512bf16"), "%s", err.msg);
  mlc_jit_unload(lib);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* ---- the bfloat16 micro-kernel family ------------------------------------------ */

static const char *FAMILY = "dense_bf16bf16f32_avx512bf16";
static char member_buf[64];
static const char *member(int64_t r, int64_t c, int64_t k) {
  snprintf(member_buf, sizeof member_buf, "%s_%lldx%lldx%lld", FAMILY, (long long)r, (long long)c, (long long)k);
  return member_buf;
}

/* i / r, j / c, k / kb, then the r x c x kb tile; the init split off
 * above the reduction; the tile tensorized with `intrin` (NULL: the
 * member of that shape). kb == K and with_init: the init left in the
 * block, which the family's _init member takes in. */
static bool schedule_tile(mlc_sched *s, int64_t r, int64_t c, int64_t kb, const char *intrin, bool with_init,
                          mlc_error *err) {
  mlc_rv b, *l, i[2], j[2], k[2], init;
  if (!mlc_sched_get_block(s, "C", "main", &b, err) || mlc_sched_get_loops(s, b, &l, err) != 3)
    return false;
  mlc_rv li = l[0], lj = l[1], lk = l[2];
  mlc_operand fi[2] = {MLC_OP_NONE, MLC_OP_INT(r)}, fj[2] = {MLC_OP_NONE, MLC_OP_INT(c)};
  mlc_operand fk[2] = {MLC_OP_NONE, MLC_OP_INT(kb)};
  if (!mlc_sched_split(s, li, 2, fi, true, i, err) || !mlc_sched_split(s, lj, 2, fj, true, j, err) ||
      !mlc_sched_split(s, lk, 2, fk, true, k, err) ||
      !mlc_sched_reorder(s, 6, (mlc_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}, err) ||
      (!with_init && !mlc_sched_decompose_reduction(s, b, k[0], &init, err)))
    return false;
  char name[96];
  snprintf(name, sizeof name, "%s_init_%lldx%lldx%lld", FAMILY, (long long)r, (long long)c, (long long)kb);
  return mlc_sched_tensorize(s, i[1], intrin ? intrin : with_init ? name : member(r, c, kb), err);
}

static bool schedule_block(mlc_sched *s, int64_t r, int64_t c, int64_t kb, const char *intrin, mlc_error *err) {
  return schedule_tile(s, r, c, kb, intrin, false, err);
}

static const int64_t BLOCK_SHAPES[][3] = {{1, 16, 2}, {3, 48, 32}, {4, 32, 64}, {7, 32, 16}, {14, 32, 128}, {2, 128, 8}};

/* Interpreted: the call in the IR, within the bound for several shapes. */
static void test_block_interp(void) {
  if (!have_bf16) return;
  for (int t = 0; t < MLC_COUNTOF(BLOCK_SHAPES); t++) {
    const int64_t *sh = BLOCK_SHAPES[t];
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){2 * sh[0], 2 * sh[1], 2 * sh[2]});
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    bool ok = schedule_block(s, sh[0], sh[1], sh[2], NULL, &err);
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    if (ok) {
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      CHECK_MSG(strstr(text.data, "\"mlc_x86_vdpbf16ps_block\"") && !strstr(text.data, "T.Cast(\"float32\", A["),
                "%s", text.data);
      mlc_str_free(&text);
      mlc_array args[3];
      fill_bf16(f, args, 40 + (uint64_t)t);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      double worst;
      int bad = bf16_wrong(args, &worst);
      CHECK_MSG(bad == 0, "%s: %d outputs outside the bound (worst relative %g)", member(sh[0], sh[1], sh[2]),
                bad, worst);
      free_args(args);
    }
    mlc_sched_free(s);
    mlc_arena_free(a);
  }
}

/* Names outside the family's shapes are no intrinsics; a member of
 * another shape and an int8 task are refused, the state unchanged. */
static void test_block_refusals(void) {
  if (!have_bf16) return;
  static const char *bad_names[] = {
      "dense_bf16bf16f32_avx512bf16_4x32",    "dense_bf16bf16f32_avx512bf16_0x16x2",
      "dense_bf16bf16f32_avx512bf16_4x24x2",  "dense_bf16bf16f32_avx512bf16_17x16x2",
      "dense_bf16bf16f32_avx512bf16_4x16x3",  "dense_bf16bf16f32_avx512bf16_4x16x4098",
      "dense_bf16bf16f32_avx512bf16_4x144x2", "dense_bf16bf16f32_avx512bf16_04x16x2",
      "dense_bf16bf16f32_avx512bf16"};
  for (int i = 0; i < MLC_COUNTOF(bad_names); i++)
    CHECK_MSG(!mlc_tensor_intrin_exists(bad_names[i]), "%s", bad_names[i]);
  CHECK(mlc_tensor_intrin_exists("dense_bf16bf16f32_avx512bf16_16x128x4096"));
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){8, 64, 32});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK(!schedule_block(s, 4, 64, 16, member(4, 32, 16), &err));
  CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
  mlc_rv b, *l;
  CHECK(mlc_sched_get_block(s, "C_update", NULL, &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 6);
  sched_snapshot snap = sched_snap(s);
  CHECK(!mlc_sched_tensorize(s, l[3], member(4, 64, 8), &err));
  CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
  CHECK(sched_unchanged(s, &snap));
  mlc_sched_free(s);
  /* int8 operands: a dtype mismatch */
  mlc_prim_func *d8 = task(a, "dense_int8", (int64_t[]){4, 32, 16});
  s = mlc_sched_new(d8, 1);
  CHECK(!schedule_block(s, 2, 32, 16, NULL, &err));
  CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* A hand-written call the builtin refuses at build time: K odd; and a
 * target without AVX-512 BF16 refuses the micro-kernel. */
static void test_block_builtin_refusals(void) {
  if (!have_bf16) return;
  static const char text[] =
      "@T.prim_func\n"
      "def main(a: T.handle, b: T.handle, c: T.handle):\n"
      "    A = T.match_buffer(a, (2, 3), \"bfloat16\")\n"
      "    B = T.match_buffer(b, (1, 2, 16, 2), \"bfloat16\")\n"
      "    C = T.match_buffer(c, (2, 16), \"float32\")\n"
      "    T.evaluate(T.call_extern(\"int32\", \"mlc_x86_vdpbf16ps_block\", C.access_ptr(\"rw\"), "
      "A.access_ptr(\"r\"), B.access_ptr(\"r\"), C.strides[0], A.strides[0], B.strides[0], "
      "B.strides[1], B.strides[2], 2, 1, 3))\n";
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "<test>", text, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_jit_lib *lib = m ? build("llvm", m->funcs[0], "bad_block", NULL, &err) : NULL;
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "K, must be a constant in [1, 4096] and a multiple of 2"), "%s", err.msg);
  mlc_jit_unload(lib);
  /* the cost model's count of its multiply-adds: R x NB x 16 x K */
  const mlc_stmt *body = m ? m->funcs[0]->body : NULL;
  while (body && body->kind == MLC_STMT_BLOCK_REALIZE) body = body->realize.block->body;
  CHECK(body && body->kind == MLC_STMT_EVALUATE && mlc_target_extern_work(body->eval.value) == 2 * 16 * 3);
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){4, 32, 8});
  mlc_sched *s = mlc_sched_new(f, 1);
  CHECK_MSG(schedule_block(s, 2, 32, 8, NULL, &err), "%s", err.msg);
  lib = build("llvm -mcpu=icelake-server -mattr=+avx512f,+avx512vnni,-avx512bf16", mlc_sched_func(s), "mk_nobf16",
              NULL, &err);
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "mlc_x86_vdpbf16ps_block needs the CPU feature +avx512bf16"), "%s", err.msg);
  mlc_jit_unload(lib);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* Bit patterns of the outputs that differ (NaNs equal to NaNs) and the
 * NaN count. */
static int bits_differ(const float *x, const float *y, int64_t n, int *nans) {
  int differ = 0;
  *nans = 0;
  for (int64_t e = 0; e < n; e++) {
    uint32_t u, v;
    memcpy(&u, x + e, 4);
    memcpy(&v, y + e, 4);
    *nans += isnan(x[e]);
    differ += u != v && !(isnan(x[e]) && isnan(y[e]));
  }
  return differ;
}

/* Compiled: the instruction in the IR; outputs within the bound and equal
 * bit for bit to the interpreter's model, on random and corner inputs,
 * for several shapes (C's row tiles inside a wider C, so strided). */
static void test_block_compiled(void) {
  if (!have_bf16) return;
  int64_t M = 84, N = 256, K = 256;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  /* each shape, then each again with the whole K and the _init member
   * (accumulators from zero: the same steps after the same start) */
  for (int u = 0; u < 2 * MLC_COUNTOF(BLOCK_SHAPES); u++) {
    int t = u % MLC_COUNTOF(BLOCK_SHAPES);
    bool with_init = u >= MLC_COUNTOF(BLOCK_SHAPES);
    int64_t sh[3] = {BLOCK_SHAPES[t][0], BLOCK_SHAPES[t][1], with_init ? K : BLOCK_SHAPES[t][2]};
    if (M % sh[0] || N % sh[1] || K % sh[2]) continue;
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    char sym[32];
    snprintf(sym, sizeof sym, "bf16_block%d", u);
    bool ok = schedule_tile(s, sh[0], sh[1], sh[2], NULL, with_init, &err);
    if (ok && with_init) {
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      CHECK_MSG(strstr(text.data, "\"mlc_x86_vdpbf16ps_block_init\"") && !strstr(text.data, "C_init"), "%s",
                text.data);
      mlc_str_free(&text);
    }
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    mlc_str ir = {0};
    mlc_jit_lib *lib = ok ? build("llvm", mlc_sched_func(s), sym, &ir, &err) : NULL;
    CHECK_MSG(!ok || lib, "%s", err.msg);
    CHECK_MSG(!lib || strstr(ir.data, "llvm.x86.avx512bf16.dpbf16ps.512"), "no vdpbf16ps in the IR");
    mlc_str_free(&ir);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &err) : NULL;
    CHECK_MSG(!lib || fn, "%s", err.msg);
    for (int corners = 0; fn && corners < 2; corners++) {
      mlc_array args[3];
      fill_bf16(f, args, 60 + (uint64_t)t);
      if (corners) {
        mlc_pcg32 rng;
        mlc_pcg32_seed(&rng, 80 + (uint64_t)t, 1);
        for (int i = 0; i < 2; i++)
          for (int64_t e = 0; e < mlc_array_numel(&args[i]); e++) ((uint16_t *)args[i].data)[e] = corner_bits(&rng);
      }
      CHECK(mlc_kernel_call(fn, 3, args) == 0);
      double worst;
      int bad = corners ? 0 : bf16_wrong(args, &worst);
      CHECK_MSG(bad == 0, "%s: %d outputs outside the bound (worst relative %g)", member(sh[0], sh[1], sh[2]),
                bad, worst);
      mlc_array model = args[2];
      model.data = mlc_xmalloc(sizeof(float) * (size_t)(M * N));
      mlc_array margs[3] = {args[0], args[1], model};
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), margs, &err), "%s", err.msg);
      int nans, differ = bits_differ(args[2].data, model.data, M * N, &nans);
      CHECK_MSG(differ == 0, "%s%s: %d of %lld outputs differ from the interpreter's model",
                member(sh[0], sh[1], sh[2]), corners ? " (corners)" : "", differ, (long long)(M * N));
      CHECK_MSG(nans < M * N / 2, "%d NaN outputs: the comparison says little", nans);
      mlc_free(model.data);
      free_args(args);
    }
    mlc_jit_unload(lib);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* One thread, 256x256x1024: the micro-kernel (a hand-picked tile), the
 * one-instruction intrinsic and our float32 matmul (its register tile,
 * mlc_tuner_cpu_register_tile), in the same run. */
static void test_block_timing(void) {
  if (!have_bf16) return;
  int64_t M = 256, N = 256, K = 1024, R = 8, C = 32, KB = 512;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  mlc_prim_func *g = task(a, "matmul", (int64_t[]){M, N, K});
  mlc_sched *sb = mlc_sched_new(f, 1), *s1 = mlc_sched_new(f, 1), *sf = mlc_sched_new(g, 1);
  mlc_error err;
  bool ok = schedule_block(sb, R, C, KB, NULL, &err) && schedule_bf16(s1, 16, false, &err) &&
            mlc_tuner_cpu_register_tile(sf, "C", false, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_jit_lib *lb = ok ? build("llvm", mlc_sched_func(sb), "bf16_mk", NULL, &err) : NULL;
  mlc_jit_lib *l1 = lb ? build("llvm", mlc_sched_func(s1), "bf16_step", NULL, &err) : NULL;
  mlc_jit_lib *lf = l1 ? build("llvm", mlc_sched_func(sf), "f32_mm", NULL, &err) : NULL;
  CHECK_MSG(!ok || lf, "%s", err.msg);
  mlc_kernel_fn fb = lf ? mlc_jit_lookup(lb, "bf16_mk", &err) : NULL;
  mlc_kernel_fn f1 = fb ? mlc_jit_lookup(l1, "bf16_step", &err) : NULL;
  mlc_kernel_fn ff = f1 ? mlc_jit_lookup(lf, "f32_mm", &err) : NULL;
  if (ff) {
    mlc_array args[3], fargs[3];
    fill_bf16(f, args, 90);
    alloc_args(g, fargs);
    for (int i = 0; i < 3; i++)
      for (int64_t e = 0; e < mlc_array_numel(&fargs[i]); e++) mlc_array_set(&fargs[i], e, (double)(e % 7) - 3);
    double worst;
    CHECK(mlc_kernel_call(fb, 3, args) == 0 && bf16_wrong(args, &worst) == 0);
    double tb = best_time(fb, args, 5), t1 = best_time(f1, args, 5), tf = best_time(ff, fargs, 5);
    double ops = 2.0 * (double)(M * N * K);
    printf("# %lldx%lldx%lld, one thread, best of 5: bf16 micro-kernel %lldx%lldx%lld %.3f ms (%.1f GFLOP/s), "
           "bf16 one vdpbf16ps per call %.3f ms (%.1f GFLOP/s), float32 register tile %.3f ms (%.1f GFLOP/s)\n",
           (long long)M, (long long)N, (long long)K, (long long)R, (long long)C, (long long)KB, tb * 1e3,
           ops / tb * 1e-9, t1 * 1e3, ops / t1 * 1e-9, tf * 1e3, ops / tf * 1e-9);
    free_args(args);
    free_args(fargs);
  }
  mlc_jit_unload(lb);
  mlc_jit_unload(l1);
  mlc_jit_unload(lf);
  mlc_sched_free(sb);
  mlc_sched_free(s1);
  mlc_sched_free(sf);
  mlc_arena_free(a);
}

/* ---- conv2d_nchwc_int8 ------------------------------------------------------- */

static void fill_int8(const mlc_prim_func *f, mlc_array *args, uint64_t seed) {
  alloc_args(f, args);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 11);
  for (int i = 0; i < 3; i++) {
    int64_t n = mlc_array_numel(&args[i]);
    for (int64_t e = 0; e < n; e++) {
      uint32_t r = mlc_pcg32_next(&rng);
      if (i == 0) ((uint8_t *)args[i].data)[e] = (uint8_t)r;
      else if (i == 1) ((int8_t *)args[i].data)[e] = (int8_t)(uint8_t)r;
      else ((int32_t *)args[i].data)[e] = (int32_t)r;
    }
  }
}

/* The convolution in plain C from the unblocked view of each operand. */
static int conv_wrong(const mlc_array *args, int64_t stride, int64_t pad) {
  const mlc_array *d = &args[0], *w = &args[1], *o = &args[2];
  int64_t N = d->shape[0], CB = d->shape[1], H = d->shape[2], W = d->shape[3], cb = d->shape[4];
  int64_t KB = w->shape[0], R = w->shape[2], S = w->shape[3], OH = o->shape[2], OW = o->shape[3];
  const uint8_t *D = d->data;
  const int8_t *Wt = w->data;
  const int32_t *O = o->data;
  int bad = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < KB * 16; k++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          int64_t s = 0;
          for (int64_t c = 0; c < CB * cb; c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t q = 0; q < S; q++) {
                int64_t iy = y * stride + r - pad, ix = x * stride + q - pad;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                int64_t di = (((n * CB + c / cb) * H + iy) * W + ix) * cb + c % cb;
                int64_t wi = ((((((k / 16) * CB + c / cb) * R + r) * S + q) * (cb / 4) + (c % cb) / 4) * 16 +
                              k % 16) * 4 + c % 4;
                s += (int64_t)D[di] * Wt[wi];
              }
          bad += O[(((n * KB + k / 16) * OH + y) * OW + x) * 16 + k % 16] != (int32_t)s;
        }
  return bad;
}

/* Samples of a task's design space: each tensorized (its call in the
 * text) and right by `wrong` on random inputs. */
static void check_space(const mlc_prim_func *f, const char *call, int seeds,
                        void (*fill)(const mlc_prim_func *, mlc_array *, uint64_t),
                        int (*wrong)(const mlc_array *, const void *), const void *ctx) {
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_error err;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  int n = sp ? mlc_tuner_space_count(sp) : 0, tensorized = 0;
  CHECK(n >= 1);
  for (int i = 0; i < n; i++)
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i, seed, &err);
      CHECK_MSG(s != NULL, "sketch %d: %s", i, err.msg);
      if (!s) continue;
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      tensorized += strstr(text.data, call) != NULL;
      mlc_str_free(&text);
      mlc_array args[3];
      fill(f, args, seed);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      int bad = wrong(args, ctx);
      CHECK_MSG(bad == 0, "sketch %d seed %llu: %d outputs wrong", i, (unsigned long long)seed, bad);
      free_args(args);
      mlc_sched_free(s);
    }
  CHECK_MSG(tensorized == seeds * n, "%d of %d samples tensorized", tensorized, seeds * n);
  if (sp) mlc_tuner_space_free(sp);
}

static int bf16_wrong_ctx(const mlc_array *args, const void *ctx) {
  MLC_UNUSED(ctx);
  double worst;
  return bf16_wrong(args, &worst);
}

/* The space tiles matmul_bf16 around the micro-kernel family (before the
 * one-instruction intrinsic): every sample tensorized and within the
 * bound (check_space), more than one member sampled, and each sample's
 * trace written as JSON, read back and replayed to the same function. */
static void test_bf16_design_space(void) {
  if (!have_bf16) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){28, 64, 96});
  check_space(f, "mlc_x86_vdpbf16ps_block", 3, fill_bf16, bf16_wrong_ctx, NULL);
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_error err;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  int n = sp ? mlc_tuner_space_count(sp) : 0, n_members = 0;
  char members[16][64];
  for (int i = 0; i < n; i++)
    for (uint64_t seed = 1; seed <= 8; seed++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i, seed, &err);
      CHECK_MSG(s != NULL, "sketch %d: %s", i, err.msg);
      if (!s) continue;
      const mlc_trace *tr = mlc_sched_trace(s);
      for (int q = 0; q < tr->insts.len; q++) {
        const mlc_inst *in = &tr->insts.data[q];
        if (in->kind != MLC_INST_TENSORIZE) continue;
        CHECK_MSG(strncmp(in->attrs[0].s, "dense_bf16bf16f32_avx512bf16_", 29) == 0, "%s", in->attrs[0].s);
        int z = 0;
        while (z < n_members && strcmp(members[z], in->attrs[0].s) != 0) z++;
        if (z == n_members && n_members < 16) snprintf(members[n_members++], 64, "%s", in->attrs[0].s);
      }
      mlc_str json = {0};
      mlc_trace_to_json(&json, tr);
      mlc_arena *ta = mlc_arena_new();
      mlc_trace *back = mlc_trace_from_json(ta, json.data, json.len, &err);
      CHECK_MSG(back != NULL, "%s", err.msg);
      mlc_sched *r = mlc_sched_new(f, 1);
      bool replayed = back && mlc_sched_replay(r, back, NULL, NULL, &err);
      CHECK_MSG(replayed, "replay: %s", err.msg);
      char h1[17], h2[17];
      mlc_func_hash_hex(mlc_sched_func(s), h1);
      mlc_func_hash_hex(mlc_sched_func(r), h2);
      CHECK_MSG(!replayed || strcmp(h1, h2) == 0, "the replayed function differs (%s, %s)", h1, h2);
      mlc_sched_free(r);
      mlc_arena_free(ta);
      mlc_str_free(&json);
      mlc_sched_free(s);
    }
  CHECK_MSG(n_members >= 2, "%d micro-kernel shapes sampled", n_members);
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* AMX BF16 (dense_bf16bf16f32_amx_<R>x<C>x<K>, tdpbf16ps): shapes beyond
 * the tile registers or K steps refused; members interpreted and compiled
 * within the bound (the instruction's order of summation is its own:
 * no bit-for-bit check), the _init member over the whole K with tilezero;
 * the design space tiles a 32-row matmul around the family; one thread
 * timed against the AVX-512 BF16 micro-kernel. */
static void test_amx_bf16(void) {
  mlc_target host;
  mlc_target_host(&host);
  if (!mlc_target_has_feature(&host, "amx-bf16")) {
    printf("SKIP AMX BF16 tests: the host CPU (%s) lacks amx-bf16\n", host.mcpu);
    return;
  }
  static const char *bad[] = {"dense_bf16bf16f32_amx_48x16x32", "dense_bf16bf16f32_amx_16x48x32",
                              "dense_bf16bf16f32_amx_16x16x16", "dense_bf16bf16f32_amx_8x16x32",
                              "dense_bf16bf16f32_amx_32x32x48"};
  for (int i = 0; i < MLC_COUNTOF(bad); i++) CHECK_MSG(!mlc_tensor_intrin_exists(bad[i]), "%s", bad[i]);
  static const int64_t shapes[][3] = {{16, 16, 32}, {32, 32, 128}, {16, 32, 256}, {32, 16, 64}, {32, 32, 512}};
  int64_t M = 64, N = 96, K = 512;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    bool with_init = sh[2] == K;
    char name[96], sym[32];
    snprintf(name, sizeof name, "dense_bf16bf16f32_amx%s_%lldx%lldx%lld", with_init ? "_init" : "",
             (long long)sh[0], (long long)sh[1], (long long)sh[2]);
    snprintf(sym, sizeof sym, "bf16_amx%d", t);
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    bool ok = schedule_tile(s, sh[0], sh[1], sh[2], name, with_init, &err);
    CHECK_MSG(ok, "%s: %s", name, err.msg);
    if (!ok) {
      mlc_sched_free(s);
      continue;
    }
    mlc_array args[3];
    fill_bf16(f, args, 120 + (uint64_t)t);
    CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
    double worst;
    int wrong = bf16_wrong(args, &worst);
    CHECK_MSG(wrong == 0, "interpreted %s: %d outside the bound (worst %g)", name, wrong, worst);
    mlc_str ir = {0};
    mlc_jit_lib *lib = build("llvm", mlc_sched_func(s), sym, &ir, &err);
    CHECK_MSG(lib, "%s", err.msg);
    CHECK_MSG(!lib || (strstr(ir.data, "llvm.x86.tdpbf16ps.internal") &&
                       (!with_init || strstr(ir.data, "llvm.x86.tilezero.internal"))),
              "%s: no tdpbf16ps (or tilezero) in the IR", name);
    mlc_str_free(&ir);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &err) : NULL;
    if (fn) {
      memset(args[2].data, 0x7f, (size_t)(M * N) * sizeof(float)); /* NaN-free garbage the init overwrites */
      CHECK(mlc_kernel_call(fn, 3, args) == 0);
      wrong = bf16_wrong(args, &worst);
      CHECK_MSG(wrong == 0, "compiled %s: %d outside the bound (worst %g)", name, wrong, worst);
    }
    mlc_jit_unload(lib);
    if (t == 0) {
      lib = build("llvm -mcpu=icelake-client -mattr=+avx512bf16", mlc_sched_func(s), "bf16_noamx", NULL, &err);
      CHECK(lib == NULL);
      CHECK_MSG(strstr(err.msg, "mlc_x86_tdpbf16ps_block needs the CPU feature +amx-bf16"), "%s", err.msg);
    }
    free_args(args);
    mlc_sched_free(s);
  }
  /* K a multiple of 32 in the builtin too */
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK(!schedule_tile(s, 16, 16, 16, "dense_bf16bf16f32_amx_16x16x16", false, &err));
  CHECK_MSG(strstr(err.msg, "no tensor intrinsic named"), "%s", err.msg);
  mlc_sched_free(s);

  /* the design space around the family (32 rows: AMX's multiple of 16) */
  mlc_prim_func *g = task(a, "matmul_bf16", (int64_t[]){32, 64, 128});
  check_space(g, "mlc_x86_tdpbf16ps_block", 3, fill_bf16, bf16_wrong_ctx, NULL);

  /* one thread, 256x256x1024 */
  M = 256, N = 256, K = 1024;
  f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  mlc_sched *sa = mlc_sched_new(f, 1), *sv = mlc_sched_new(f, 1);
  bool ok = schedule_tile(sa, 16, 32, 1024, "dense_bf16bf16f32_amx_init_16x32x1024", true, &err) &&
            schedule_block(sv, 8, 32, 256, NULL, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_jit_lib *la = ok ? build("llvm", mlc_sched_func(sa), "bf16_amx_t", NULL, &err) : NULL;
  mlc_jit_lib *lv = la ? build("llvm", mlc_sched_func(sv), "bf16_vdp_t", NULL, &err) : NULL;
  CHECK_MSG(!ok || (la && lv), "%s", err.msg);
  mlc_kernel_fn fa = lv ? mlc_jit_lookup(la, "bf16_amx_t", &err) : NULL;
  mlc_kernel_fn fv = fa ? mlc_jit_lookup(lv, "bf16_vdp_t", &err) : NULL;
  if (fa && fv) {
    mlc_array args[3];
    fill_bf16(f, args, 130);
    double worst;
    CHECK(mlc_kernel_call(fa, 3, args) == 0 && bf16_wrong(args, &worst) == 0);
    double ta = best_time(fa, args, 7), tv = best_time(fv, args, 7), ops = 2.0 * (double)(M * N * K);
    printf("# matmul_bf16 %lldx%lldx%lld, one thread, best of 7: AMX 16x32x1024 (init) %.3f ms (%.1f GFLOP/s), "
           "AVX-512 BF16 micro-kernel 8x32x256 %.3f ms (%.1f GFLOP/s)\n",
           (long long)M, (long long)N, (long long)K, ta * 1e3, ops / ta * 1e-9, tv * 1e3, ops / tv * 1e-9);
    free_args(args);
  }
  mlc_jit_unload(la);
  mlc_jit_unload(lv);
  mlc_sched_free(sa);
  mlc_sched_free(sv);
  mlc_arena_free(a);
}

/* The cost model counts a bfloat16 micro-kernel's products as float
 * multiply-adds (the calls times R x C x K), not int ones, and its
 * arithmetic intensity curve is not empty. */
static void test_bf16_features(void) {
  if (!have_bf16) return;
  int64_t M = 28, N = 64, K = 128;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul_bf16", (int64_t[]){M, N, K});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  bool ok = schedule_block(s, 7, 32, 64, NULL, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_features ft;
  CHECK_MSG(ok && mlc_features_extract(mlc_sched_func(s), &ft, &err), "%s", err.msg);
  if (ok) {
    double want = log2((double)(M * N * K) + 1), fmad = 0, imad = 0, ai = 0;
    for (int r = 0; r < ft.n_stores; r++) {
      const float *row = ft.rows + (size_t)r * MLC_FEATURE_DIM;
      if (row[0] > fmad) fmad = row[0], imad = row[7], ai = row[156];
    }
    CHECK_MSG(fmad > want - 1e-3 && fmad < want + 0.1, "float_mad %g, want %g", fmad, want);
    CHECK_MSG(imad < want - 4, "int_mad %g: the products counted as int work", imad);
    CHECK_MSG(ai > 0, "the arithmetic intensity curve is empty");
    mlc_features_free(&ft);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static int conv_wrong_ctx(const mlc_array *args, const void *ctx) {
  const int64_t *sp = ctx;
  return conv_wrong(args, sp[0], sp[1]);
}

/* One schedule by hand: the output-channel block and the last four input
 * channels innermost, tensorized; exact in the interpreter and compiled. */
static void test_conv_int8(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  /* N, C, H, W, K, R, S, stride, pad: 8 input channels (blocks of 8), pad 1 */
  mlc_prim_func *f = task(a, "conv2d_nchwc_int8", (int64_t[]){1, 8, 6, 5, 32, 3, 3, 1, 1});
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  mlc_rv b, *l, init;
  bool ok = mlc_sched_get_block(s, "conv2d_nchwc_int8", NULL, &b, &err) &&
            mlc_sched_get_loops(s, b, &l, &err) == 10;
  mlc_rv lp[10];
  if (ok) memcpy(lp, l, sizeof lp);
  /* n f y x k rc ry rx rf rs -> n f y x rc ry rx rf | k rs */
  ok = ok && mlc_sched_reorder(s, 10, (mlc_rv[]){lp[0], lp[1], lp[2], lp[3], lp[5], lp[6], lp[7], lp[8], lp[4], lp[9]}, &err) &&
       mlc_sched_decompose_reduction(s, b, lp[5], &init, &err) && mlc_sched_tensorize(s, lp[4], CONV, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_array args[3];
  fill_int8(f, args, 3);
  CHECK_MSG(!ok || mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
  int bad = conv_wrong(args, 1, 1);
  CHECK_MSG(bad == 0, "interpreted: %d outputs differ", bad);
  mlc_jit_lib *lib = ok ? build("llvm", mlc_sched_func(s), "conv_vnni", NULL, &err) : NULL;
  CHECK_MSG(lib, "%s", err.msg);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, "conv_vnni", &err) : NULL;
  if (fn) {
    memset(args[2].data, 0x5a, sizeof(int32_t) * (size_t)mlc_array_numel(&args[2]));
    CHECK(mlc_kernel_call(fn, 3, args) == 0);
    bad = conv_wrong(args, 1, 1);
    CHECK_MSG(bad == 0, "compiled: %d outputs differ", bad);
  }
  mlc_jit_unload(lib);
  free_args(args);
  mlc_sched_free(s);
  const mlc_task_def *d = mlc_task_find("conv2d_nchwc_int8");
  int64_t shape[MLC_TASK_MAX_DIMS];
  CHECK(!mlc_task_parse_shape(d, "1,8,6,6,24,3,3", shape, &err));
  CHECK_MSG(strstr(err.msg, "K a multiple of 16"), "%s", err.msg);
  CHECK(!mlc_task_parse_shape(d, "1,6,6,6,16,3,3", shape, &err));
  mlc_arena_free(a);
}

/* The registry's listing and the dot-product shapes the tuner's rule
 * reads off descriptions. */
static void test_dot_shape(void) {
  int64_t l = 0, d = 0;
  CHECK(!mlc_tensor_intrin_dot_shape("tmm16", &l, &d)); /* three loops */
  CHECK(!mlc_tensor_intrin_dot_shape("nosuch", &l, &d));
  if (have_vnni) CHECK(mlc_tensor_intrin_dot_shape(CONV, &l, &d) && l == 16 && d == 4);
  if (have_bf16) CHECK(mlc_tensor_intrin_dot_shape(BF16, &l, &d) && l == 16 && d == 2);
  mlc_error err;
  int n = 0;
  CHECK_MSG(mlc_tensor_intrin_register_file("examples/tensorize/dot_8x4_f32.py", &n, &err), "%s", err.msg);
  CHECK(n == 1 && mlc_tensor_intrin_dot_shape("dot_8x4_f32", &l, &d) && l == 8 && d == 4);
  bool listed = false;
  for (int i = 0; i < mlc_tensor_intrin_count(); i++) listed |= strcmp(mlc_tensor_intrin_name(i), "dot_8x4_f32") == 0;
  CHECK(listed);
  CHECK(!mlc_tensor_intrin_register_file("tests/nosuch_intrin.py", &n, &err));
}

static void test_conv_design_space(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  int64_t sp[2] = {2, 1};
  check_space(task(a, "conv2d_nchwc_int8", (int64_t[]){1, 16, 7, 7, 32, 3, 3, 2, 1}),
              "mlc_x86_vpdpbusd_16x4", 2, fill_int8, conv_wrong_ctx, sp);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_register);
  RUN(test_bf16_interp);
  RUN(test_bf16_refusals);
  RUN(test_bf16_compiled);
  RUN(test_bf16_target_without);
  RUN(test_block_interp);
  RUN(test_block_refusals);
  RUN(test_block_builtin_refusals);
  RUN(test_block_compiled);
  RUN(test_block_timing);
  RUN(test_bf16_design_space);
  RUN(test_amx_bf16);
  RUN(test_bf16_features);
  RUN(test_conv_int8);
  RUN(test_conv_design_space);
  RUN(test_dot_shape);
  return test_summary();
}
