/* AVX-512 VNNI through tensorize: the dense_int8 task (uint8 x int8 ->
 * int32, weights packed [N/16, K/4, 16, 4]) tiled around the built-in
 * dot_16x4_u8i8i32_vnni intrinsic and around the register-blocked
 * micro-kernels dense_u8i8i32_vnni_<R>x<C>x<K> and tensorized, checked
 * against a plain C reference exactly, in the interpreter (any machine)
 * and compiled (a CPU with AVX-512 VNNI; SKIP otherwise); the intrinsics
 * registered only for a feature list that has the instruction; other
 * shapes, dtypes and names refused; a target without it refused; the
 * design space's samples tensorized, exact and replayed from their JSON
 * traces; timing against the same tiling without tensorize and against
 * the one-step intrinsic; the _init members, which take a block's init in
 * with the whole reduction. */
#include "costmodel/costmodel_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/jit_util.h"
#include "tests/sched_util.h"
#include "tests/test.h"
#include "tuner/tuner_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *INTRIN = "dot_16x4_u8i8i32_vnni";
static bool have_vnni; /* the host has it and the intrinsic is registered */
static bool have_amx;  /* the host has AMX int8 tiles: the AMX family is registered */

static mlc_prim_func *dense(mlc_arena *a, int64_t m, int64_t n, int64_t k) {
  const mlc_task_def *d = mlc_task_find("dense_int8");
  MLC_ASSERT(d);
  return mlc_task_build(a, d, (int64_t[]){m, n, k});
}

/* Operands with values over the whole uint8 / int8 ranges (products
 * reach 255 * -128, sums need int32), seeded. */
static void fill(const mlc_prim_func *f, mlc_array *args, uint64_t seed) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 11);
  for (int i = 0; i < 3; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    args[i] = *x;
    mlc_free(x);
    int64_t n = mlc_array_numel(&args[i]);
    for (int64_t e = 0; e < n; e++) {
      uint32_t r = mlc_pcg32_next(&rng);
      if (i == 0) ((uint8_t *)args[i].data)[e] = (uint8_t)r;
      else if (i == 1) ((int8_t *)args[i].data)[e] = (int8_t)(uint8_t)r;
      else ((int32_t *)args[i].data)[e] = (int32_t)r; /* garbage: the init must overwrite it */
    }
  }
}

static void free_args(mlc_array *args) {
  for (int i = 0; i < 3; i++) mlc_free(args[i].data);
}

/* C = A @ W^T with W[j, k] = B[j / 16, k / 4, j % 16, k % 4], in C. */
static void reference(const mlc_array *args, int32_t *c) {
  int64_t m = args[0].shape[0], k = args[0].shape[1], n = args[2].shape[1];
  const uint8_t *A = args[0].data;
  const int8_t *B = args[1].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t s = 0;
      for (int64_t r = 0; r < k; r++)
        s += (int64_t)A[i * k + r] * B[((j / 16) * (k / 4) + r / 4) * 64 + (j % 16) * 4 + r % 4];
      c[i * n + j] = (int32_t)s;
    }
}

static int count_wrong(const mlc_array *args) {
  int64_t numel = mlc_array_numel(&args[2]);
  int32_t *want = mlc_xmalloc(sizeof(int32_t) * (size_t)numel);
  reference(args, want);
  int bad = 0;
  for (int64_t e = 0; e < numel; e++) bad += ((int32_t *)args[2].data)[e] != want[e];
  mlc_free(want);
  return bad;
}

/* The hand schedule: i, j / 16, k / 4, then the 16 x 4 tile; the init
 * split off above the reduction; the tile tensorized (unless `plain`);
 * i parallel when asked. */
static bool schedule(mlc_sched *s, int64_t tile_n, bool plain, bool parallel, mlc_error *err) {
  mlc_rv b, *l, j[2], k[2], init;
  if (!mlc_sched_get_block(s, "C", "main", &b, err) || mlc_sched_get_loops(s, b, &l, err) != 3)
    return false;
  mlc_rv i = l[0], lj = l[1], lk = l[2];
  mlc_operand fj[2] = {MLC_OP_NONE, MLC_OP_INT(tile_n)}, fk[2] = {MLC_OP_NONE, MLC_OP_INT(4)};
  if (!mlc_sched_split(s, lj, 2, fj, true, j, err) || !mlc_sched_split(s, lk, 2, fk, true, k, err) ||
      !mlc_sched_reorder(s, 5, (mlc_rv[]){i, j[0], k[0], j[1], k[1]}, err) ||
      !mlc_sched_decompose_reduction(s, b, k[0], &init, err))
    return false;
  if (parallel && !mlc_sched_parallel(s, i, err)) return false;
  return plain || mlc_sched_tensorize(s, j[1], INTRIN, err);
}

static char member_buf[64];
static const char *family = "dense_u8i8i32_vnni"; /* member() names one of this family */
static const char *member(int64_t r, int64_t c, int64_t k) {
  snprintf(member_buf, sizeof member_buf, "%s_%lldx%lldx%lld", family, (long long)r, (long long)c,
           (long long)k);
  return member_buf;
}

/* The micro-kernel's hand schedule: i / r, j / c, k / kb, then the r x c x
 * kb tile; the init split off above the reduction; the tile tensorized
 * with `intrin` (NULL: the member of that shape); i's outer part parallel
 * when asked. */
static bool schedule_block(mlc_sched *s, int64_t r, int64_t c, int64_t kb, const char *intrin,
                           bool parallel, mlc_error *err) {
  mlc_rv b, *l, i[2], j[2], k[2], init;
  if (!mlc_sched_get_block(s, "C", "main", &b, err) || mlc_sched_get_loops(s, b, &l, err) != 3)
    return false;
  mlc_rv li = l[0], lj = l[1], lk = l[2];
  mlc_operand fi[2] = {MLC_OP_NONE, MLC_OP_INT(r)}, fj[2] = {MLC_OP_NONE, MLC_OP_INT(c)};
  mlc_operand fk[2] = {MLC_OP_NONE, MLC_OP_INT(kb)};
  if (!mlc_sched_split(s, li, 2, fi, true, i, err) || !mlc_sched_split(s, lj, 2, fj, true, j, err) ||
      !mlc_sched_split(s, lk, 2, fk, true, k, err) ||
      !mlc_sched_reorder(s, 6, (mlc_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}, err) ||
      (parallel && !mlc_sched_parallel(s, i[0], err)) ||
      !mlc_sched_decompose_reduction(s, b, k[0], &init, err))
    return false;
  return mlc_sched_tensorize(s, i[1], intrin ? intrin : member(r, c, kb), err);
}

static void test_register(void) {
  mlc_error err;
  int n = -1;
  /* Another CPU's list registers nothing (the registry is process-wide,
   * so this runs first). */
  CHECK_MSG(mlc_tensor_intrin_register_cpu("+avx2,+avx512f,-avx512vnni", &n, &err), "%s", err.msg);
  CHECK(n == 0 && !mlc_tensor_intrin_exists(INTRIN));
  CHECK(mlc_tensor_intrin_register_cpu("+avx512vnnix,+xavx512vnni", &n, &err) && n == 0);
  mlc_target host;
  mlc_target_host(&host);
  CHECK_MSG(mlc_tensor_intrin_register_cpu(mlc_target_cpu_features(&host), &n, &err), "%s", err.msg);
  have_vnni = mlc_target_has_feature(&host, "avx512vnni");
  have_amx = mlc_target_has_feature(&host, "amx-int8") && mlc_target_has_feature(&host, "amx-tile");
  CHECK(mlc_tensor_intrin_exists("dense_u8i8i32_amx_32x32x64") == have_amx);
  if (!have_amx) printf("SKIP AMX tests: the host CPU (%s) lacks amx-int8\n", host.mcpu);
  /* the VNNI pair (dense and NCHWc operand ranks), and BF16's where the host has it */
  CHECK(n == (have_vnni ? 2 : 0) + mlc_target_has_feature(&host, "avx512bf16") &&
        mlc_tensor_intrin_exists(INTRIN) == have_vnni);
  if (!have_vnni) printf("SKIP VNNI tests: the host CPU (%s) lacks avx512vnni\n", host.mcpu);
}

static void test_feature_query(void) {
  mlc_target t;
  mlc_error err;
  CHECK(mlc_target_parse("llvm -mattr=+avx2,+avx512vnni", &t, &err));
  CHECK(mlc_target_has_feature(&t, "avx512vnni") && !mlc_target_has_feature(&t, "avx512"));
  CHECK(mlc_target_parse("llvm -mattr=+avx512vnni,-avx512vnni", &t, &err));
  CHECK(!mlc_target_has_feature(&t, "avx512vnni"));
  CHECK(mlc_target_parse("llvm -mcpu=x86-64", &t, &err) && !mlc_target_has_feature(&t, "avx2"));
}

/* Tensorized, interpreted (the builtin's C version): exact. */
static void test_interp(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, 3, 48, 24);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK_MSG(schedule(s, 16, false, false, &err), "%s", err.msg);
  const mlc_prim_func *g = mlc_sched_func(s);
  mlc_str text = {0};
  mlc_print_func(&text, g);
  CHECK_MSG(strstr(text.data, "T.call_extern(\"int32\", \"mlc_x86_vpdpbusd_16x4\"") &&
                !strstr(text.data, "T.Cast(\"int32\", A["), "%s", text.data);
  mlc_str_free(&text);
  mlc_array args[3];
  fill(f, args, 5);
  CHECK_MSG(mlc_interp_run(g, args, &err), "%s", err.msg);
  int bad = count_wrong(args);
  CHECK_MSG(bad == 0, "%d outputs differ from the reference", bad);
  free_args(args);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* The micro-kernels of several shapes (one row, odd rows, 1 to 4 column
 * blocks, short and long K), interpreted: exact. */
static void test_block_interp(void) {
  if (!have_vnni) return;
  static const int64_t shapes[][3] = {{1, 16, 4}, {3, 48, 32}, {4, 64, 64}, {8, 32, 16}, {2, 16, 128}};
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = dense(a, 2 * sh[0], 2 * sh[1], 2 * sh[2]);
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    bool ok = schedule_block(s, sh[0], sh[1], sh[2], NULL, false, &err);
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    if (ok) {
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      CHECK_MSG(strstr(text.data, "\"mlc_x86_vpdpbusd_block\"") && !strstr(text.data, "T.Cast(\"int32\", A["),
                "%s", text.data);
      mlc_str_free(&text);
      mlc_array args[3];
      fill(f, args, 40 + (uint64_t)t);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      int bad = count_wrong(args);
      CHECK_MSG(bad == 0, "%s: %d outputs differ from the reference", member(sh[0], sh[1], sh[2]), bad);
      free_args(args);
    }
    mlc_sched_free(s);
    mlc_arena_free(a);
  }
}

/* Names outside the family's shapes are not intrinsics; a member of
 * another tile shape, a float dense and a block with its init are
 * refused with the reason, the state (IR, trace) unchanged. */
static void test_block_refusals(void) {
  if (!have_vnni) return;
  static const char *bad_names[] = {
      "dense_u8i8i32_vnni_4x64",     "dense_u8i8i32_vnni_0x16x4",   "dense_u8i8i32_vnni_4x24x4",
      "dense_u8i8i32_vnni_04x16x4",  "dense_u8i8i32_vnni_17x16x4",  "dense_u8i8i32_vnni_4x144x4",
      "dense_u8i8i32_vnni_4x16x6",   "dense_u8i8i32_vnni_4x16x8192", "dense_u8i8i32_vnni_4x16x4x",
      "dense_u8i8i32_vnni_-1x16x4", "dense_u8i8i32_vnni"};
  for (int i = 0; i < MLC_COUNTOF(bad_names); i++)
    CHECK_MSG(!mlc_tensor_intrin_exists(bad_names[i]), "%s", bad_names[i]);
  CHECK(mlc_tensor_intrin_exists("dense_u8i8i32_vnni_16x128x4096"));

  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, 8, 64, 32);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  /* a 4x64x16 tile, tensorized with the 4x32x16 member */
  CHECK(!schedule_block(s, 4, 64, 16, member(4, 32, 16), false, &err));
  CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
  mlc_rv b, *l;
  CHECK(mlc_sched_get_block(s, "C_update", NULL, &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 6);
  sched_snapshot snap = sched_snap(s);
  CHECK(!mlc_sched_tensorize(s, l[3], member(4, 64, 32), &err));
  CHECK_MSG(strstr(err.msg, "shape mismatch"), "%s", err.msg);
  CHECK(!mlc_sched_tensorize(s, l[3], "dense_u8i8i32_vnni_4x64", &err));
  CHECK_MSG(strstr(err.msg, "no tensor intrinsic named"), "%s", err.msg);
  CHECK(sched_unchanged(s, &snap));
  mlc_sched_free(s);

  /* the init still inside */
  s = mlc_sched_new(f, 1);
  mlc_rv i[2], j[2], k[2];
  bool ok = mlc_sched_get_block(s, "C", "main", &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 3;
  mlc_rv li = l[0], lj = l[1], lk = l[2];
  ok = ok && mlc_sched_split(s, li, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(2)}, true, i, &err) &&
       mlc_sched_split(s, lj, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(32)}, true, j, &err) &&
       mlc_sched_split(s, lk, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(16)}, true, k, &err) &&
       mlc_sched_reorder(s, 6, (mlc_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}, &err);
  CHECK_MSG(ok, "%s", err.msg);
  CHECK(!mlc_sched_tensorize(s, i[1], member(2, 32, 16), &err));
  CHECK_MSG(strstr(err.msg, "reduction mismatch"), "%s", err.msg);
  mlc_sched_free(s);

  /* float32 operands: a dtype mismatch */
  const mlc_task_def *d = mlc_task_find("matmul");
  mlc_prim_func *mm = mlc_task_build(a, d, (int64_t[]){4, 32, 16});
  s = mlc_sched_new(mm, 1);
  CHECK(!schedule_block(s, 2, 32, 16, NULL, false, &err));
  CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* Tiles of another shape are refused, the state unchanged. */
static void test_refusals(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, 2, 32, 16);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK(!schedule(s, 8, false, false, &err));
  CHECK_MSG(strstr(err.msg, "mismatch") != NULL, "%s", err.msg);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* Compiled: the instruction in the IR, exact results, and the time
 * against the same tiling computed by LLVM's own vectorization. */
static void test_compiled(void) {
  if (!have_vnni) return;
  int64_t M = 128, N = 256, K = 256;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, M, N, K);
  mlc_sched *sv = mlc_sched_new(f, 1), *sp = mlc_sched_new(f, 1);
  mlc_error err;
  bool ok = schedule(sv, 16, false, false, &err) && schedule(sp, 16, true, false, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_str ir = {0};
  mlc_jit_lib *lv = ok ? build("llvm", mlc_sched_func(sv), "dense_vnni", &ir, &err) : NULL;
  CHECK_MSG(lv != NULL, "%s", err.msg);
  CHECK_MSG(!lv || strstr(ir.data, "llvm.x86.avx512.vpdpbusd.512"), "no vpdpbusd in the IR");
  mlc_str_free(&ir);
  mlc_jit_lib *lp = lv ? build("llvm", mlc_sched_func(sp), "dense_plain", NULL, &err) : NULL;
  CHECK_MSG(!lv || lp, "%s", err.msg);
  mlc_kernel_fn fv = lv ? mlc_jit_lookup(lv, "dense_vnni", &err) : NULL;
  mlc_kernel_fn fp = lp ? mlc_jit_lookup(lp, "dense_plain", &err) : NULL;
  CHECK_MSG(!lp || (fv && fp), "%s", err.msg);
  if (fv && fp) {
    mlc_array args[3];
    fill(f, args, 9);
    CHECK(mlc_kernel_call(fv, 3, args) == 0);
    int bad = count_wrong(args);
    CHECK_MSG(bad == 0, "vnni: %d outputs differ from the reference", bad);
    CHECK(mlc_kernel_call(fp, 3, args) == 0);
    bad = count_wrong(args);
    CHECK_MSG(bad == 0, "plain: %d outputs differ from the reference", bad);
    double tv = best_time(fv, args, 5), tp = best_time(fp, args, 5);
    double ops = 2.0 * (double)(M * N * K);
    printf("# dense_int8 %lldx%lldx%lld, one thread, best of 5: tensorized (vpdpbusd) %.3f ms "
           "(%.1f GOP/s), same tiling untensorized %.3f ms (%.1f GOP/s)\n",
           (long long)M, (long long)N, (long long)K, tv * 1e3, ops / tv * 1e-9, tp * 1e3,
           ops / tp * 1e-9);
    free_args(args);
  }
  mlc_jit_unload(lv);
  mlc_jit_unload(lp);
  mlc_sched_free(sv);
  mlc_sched_free(sp);
  mlc_arena_free(a);
}

/* The micro-kernels compiled: exact for several shapes (packed and
 * strided operands: a row tile of C inside a wider C), and the time of
 * the 4x64x256 one against the one-step intrinsic on the same problem. */
static void test_block_compiled(void) {
  if (!have_vnni) return;
  static const int64_t shapes[][3] = {{1, 16, 4}, {3, 48, 32}, {4, 64, 256}, {8, 32, 16}, {6, 64, 64}};
  int64_t M = 48, N = 192, K = 512;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, M, N, K);
  mlc_array args[3];
  fill(f, args, 77);
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    char sym[32];
    snprintf(sym, sizeof sym, "dense_block%d", t);
    bool ok = schedule_block(s, sh[0], sh[1], sh[2], NULL, t % 2 == 0, &err);
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    mlc_str ir = {0};
    mlc_jit_lib *lib = ok ? build("llvm", mlc_sched_func(s), sym, &ir, &err) : NULL;
    CHECK_MSG(!ok || lib, "%s", err.msg);
    CHECK_MSG(!lib || strstr(ir.data, "llvm.x86.avx512.vpdpbusd.512"), "no vpdpbusd in the IR");
    mlc_str_free(&ir);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &err) : NULL;
    CHECK_MSG(!lib || fn, "%s", err.msg);
    if (fn) {
      memset(args[2].data, 0x5a, (size_t)mlc_array_numel(&args[2]) * 4);
      CHECK(mlc_kernel_call(fn, 3, args) == 0);
      int bad = count_wrong(args);
      CHECK_MSG(bad == 0, "%s: %d outputs differ from the reference", member(sh[0], sh[1], sh[2]), bad);
    }
    mlc_jit_unload(lib);
    mlc_sched_free(s);
  }
  free_args(args);

  /* timing: 128x256x512, one thread */
  M = 128, N = 256, K = 512;
  f = dense(a, M, N, K);
  mlc_sched *sb = mlc_sched_new(f, 1), *s1 = mlc_sched_new(f, 1);
  mlc_error err;
  bool ok = schedule_block(sb, 4, 64, 256, NULL, false, &err) && schedule(s1, 16, false, false, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_jit_lib *lb = ok ? build("llvm", mlc_sched_func(sb), "dense_mk", NULL, &err) : NULL;
  mlc_jit_lib *l1 = lb ? build("llvm", mlc_sched_func(s1), "dense_step", NULL, &err) : NULL;
  CHECK_MSG(!ok || (lb && l1), "%s", err.msg);
  mlc_kernel_fn fb = l1 ? mlc_jit_lookup(lb, "dense_mk", &err) : NULL;
  mlc_kernel_fn f1 = fb ? mlc_jit_lookup(l1, "dense_step", &err) : NULL;
  if (fb && f1) {
    fill(f, args, 78);
    CHECK(mlc_kernel_call(fb, 3, args) == 0 && count_wrong(args) == 0);
    double tb = best_time(fb, args, 7), t1 = best_time(f1, args, 7);
    double ops = 2.0 * (double)(M * N * K);
    printf("# dense_int8 %lldx%lldx%lld, one thread, best of 7: micro-kernel 4x64x256 %.3f ms "
           "(%.1f GOP/s), one vpdpbusd per call %.3f ms (%.1f GOP/s)\n",
           (long long)M, (long long)N, (long long)K, tb * 1e3, ops / tb * 1e-9, t1 * 1e3,
           ops / t1 * 1e-9);
    free_args(args);
  }
  mlc_jit_unload(lb);
  mlc_jit_unload(l1);
  mlc_sched_free(sb);
  mlc_sched_free(s1);
  mlc_arena_free(a);
}

/* The AMX micro-kernels: exact interpreted (any shape of the family) and
 * compiled, refused for shapes beyond the tile registers and for a target
 * without AMX, and timed against the VNNI micro-kernel. */
static void test_amx(void) {
  if (!have_amx) return;
  CHECK(!mlc_tensor_intrin_exists("dense_u8i8i32_amx_48x16x64") &&
        !mlc_tensor_intrin_exists("dense_u8i8i32_amx_16x48x64") &&
        !mlc_tensor_intrin_exists("dense_u8i8i32_amx_16x16x32") &&
        !mlc_tensor_intrin_exists("dense_u8i8i32_amx_8x16x64"));
  static const int64_t shapes[][3] = {{16, 16, 64}, {32, 32, 128}, {16, 32, 256}, {32, 16, 64}};
  int64_t M = 64, N = 96, K = 512;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, M, N, K);
  mlc_array args[3];
  fill(f, args, 91);
  family = "dense_u8i8i32_amx";
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    char sym[32];
    snprintf(sym, sizeof sym, "dense_amx%d", t);
    bool ok = schedule_block(s, sh[0], sh[1], sh[2], NULL, t % 2 == 1, &err);
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    if (!ok) {
      mlc_sched_free(s);
      continue;
    }
    memset(args[2].data, 0x5a, (size_t)mlc_array_numel(&args[2]) * 4);
    CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
    int bad = count_wrong(args);
    CHECK_MSG(bad == 0, "interpreted %s: %d outputs wrong", member(sh[0], sh[1], sh[2]), bad);
    mlc_str ir = {0};
    mlc_jit_lib *lib = build("llvm", mlc_sched_func(s), sym, &ir, &err);
    CHECK_MSG(lib, "%s", err.msg);
    CHECK_MSG(!lib || strstr(ir.data, "llvm.x86.tdpbusd.internal"), "no tdpbusd in the IR");
    mlc_str_free(&ir);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &err) : NULL;
    CHECK_MSG(!lib || fn, "%s", err.msg);
    if (fn) {
      memset(args[2].data, 0x5a, (size_t)mlc_array_numel(&args[2]) * 4);
      CHECK(mlc_kernel_call(fn, 3, args) == 0);
      bad = count_wrong(args);
      CHECK_MSG(bad == 0, "compiled %s: %d outputs wrong", member(sh[0], sh[1], sh[2]), bad);
    }
    mlc_jit_unload(lib);
    if (t == 0) { /* no AMX in the target: refused */
      lib = build("llvm -mcpu=icelake-client -mattr=+avx512vnni", mlc_sched_func(s), "dense_noamx", NULL, &err);
      CHECK(lib == NULL);
      CHECK_MSG(strstr(err.msg, "mlc_x86_tdpbusd_block needs the CPU feature +amx-int8"), "%s", err.msg);
      mlc_jit_unload(lib);
    }
    mlc_sched_free(s);
  }
  free_args(args);

  /* timing: 256x256x1024, one thread: AMX 32x32x1024 against VNNI 4x64x256 */
  M = 256, N = 256, K = 1024;
  f = dense(a, M, N, K);
  mlc_sched *sa = mlc_sched_new(f, 1), *sv = mlc_sched_new(f, 1);
  mlc_error err;
  bool ok = schedule_block(sa, 32, 32, 1024, NULL, false, &err);
  family = "dense_u8i8i32_vnni";
  ok = ok && schedule_block(sv, 4, 64, 256, NULL, false, &err);
  CHECK_MSG(ok, "%s", err.msg);
  mlc_jit_lib *la = ok ? build("llvm", mlc_sched_func(sa), "dense_amx_t", NULL, &err) : NULL;
  mlc_jit_lib *lv = la ? build("llvm", mlc_sched_func(sv), "dense_vnni_t", NULL, &err) : NULL;
  CHECK_MSG(!ok || (la && lv), "%s", err.msg);
  mlc_kernel_fn fa = lv ? mlc_jit_lookup(la, "dense_amx_t", &err) : NULL;
  mlc_kernel_fn fv = fa ? mlc_jit_lookup(lv, "dense_vnni_t", &err) : NULL;
  if (fa && fv) {
    fill(f, args, 92);
    CHECK(mlc_kernel_call(fa, 3, args) == 0 && count_wrong(args) == 0);
    double ta = best_time(fa, args, 7), tv = best_time(fv, args, 7);
    double ops = 2.0 * (double)(M * N * K);
    printf("# dense_int8 %lldx%lldx%lld, one thread, best of 7: AMX 32x32x1024 %.3f ms (%.1f GOP/s), "
           "VNNI micro-kernel 4x64x256 %.3f ms (%.1f GOP/s)\n",
           (long long)M, (long long)N, (long long)K, ta * 1e3, ops / ta * 1e-9, tv * 1e3, ops / tv * 1e-9);
    free_args(args);
  }
  mlc_jit_unload(la);
  mlc_jit_unload(lv);
  mlc_sched_free(sa);
  mlc_sched_free(sv);
  mlc_arena_free(a);
}

/* The tile loops of an r x c x kb micro-kernel cut off (i / r, j / c,
 * k / kb, then the tile), the init still in the block; *tile: the
 * tile's outermost loop. */
static bool cut_tile(mlc_sched *s, int64_t r, int64_t c, int64_t kb, mlc_rv *tile, mlc_error *err) {
  mlc_rv b, *l, i[2], j[2], k[2];
  if (!mlc_sched_get_block(s, "C", "main", &b, err) || mlc_sched_get_loops(s, b, &l, err) != 3) return false;
  mlc_rv li = l[0], lj = l[1], lk = l[2];
  bool ok = mlc_sched_split(s, li, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(r)}, true, i, err) &&
            mlc_sched_split(s, lj, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(c)}, true, j, err) &&
            mlc_sched_split(s, lk, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(kb)}, true, k, err) &&
            mlc_sched_reorder(s, 6, (mlc_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}, err);
  *tile = i[1];
  return ok;
}

/* The _init members: a tile holding the whole reduction is tensorized
 * with its init (no decompose_reduction): the call is the builtin's
 * _init variant, nothing stores the zeros, and the result is exact over
 * garbage in C, interpreted and compiled (VNNI; AMX with tilezero where
 * the host has it). Refused with the reason, the state unchanged: a tile
 * of part of the reduction (its init runs once over several calls), a
 * decomposed update (no init to compute), the plain member on a block
 * with its init. */
static void test_init_members(void) {
  if (!have_vnni) return;
  static const int64_t shapes[][3] = {{1, 16, 32}, {3, 48, 64}, {4, 32, 128}, {16, 32, 128}};
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    bool amx = t == 3;
    if (amx && !have_amx) continue;
    family = amx ? "dense_u8i8i32_amx_init" : "dense_u8i8i32_vnni_init";
    const char *builtin = amx ? "\"mlc_x86_tdpbusd_block_init\"" : "\"mlc_x86_vpdpbusd_block_init\"";
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = dense(a, 2 * sh[0], 2 * sh[1], sh[2]);
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    mlc_rv tile;
    bool ok = cut_tile(s, sh[0], sh[1], sh[2], &tile, &err) &&
              mlc_sched_tensorize(s, tile, member(sh[0], sh[1], sh[2]), &err);
    CHECK_MSG(ok, "%s: %s", member(sh[0], sh[1], sh[2]), err.msg);
    if (ok) {
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      CHECK_MSG(strstr(text.data, builtin) && !strstr(text.data, "C_init") && !strstr(text.data, "] = 0"),
                "%s", text.data);
      mlc_str_free(&text);
      mlc_array args[3];
      fill(f, args, 60 + (uint64_t)t);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      int bad = count_wrong(args);
      CHECK_MSG(bad == 0, "interpreted %s: %d outputs wrong", member(sh[0], sh[1], sh[2]), bad);
      mlc_str ir = {0};
      mlc_jit_lib *lib = build("llvm", mlc_sched_func(s), "dense_init", &ir, &err);
      CHECK_MSG(lib, "%s", err.msg);
      CHECK_MSG(!lib || !amx || strstr(ir.data, "llvm.x86.tilezero.internal"), "no tilezero in the IR");
      mlc_str_free(&ir);
      mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, "dense_init", &err) : NULL;
      if (fn) {
        memset(args[2].data, 0x5a, (size_t)mlc_array_numel(&args[2]) * 4);
        CHECK(mlc_kernel_call(fn, 3, args) == 0);
        bad = count_wrong(args);
        CHECK_MSG(bad == 0, "compiled %s: %d outputs wrong", member(sh[0], sh[1], sh[2]), bad);
      }
      mlc_jit_unload(lib);
      free_args(args);
    }
    mlc_sched_free(s);

    /* half the reduction per tile: the init would run at every call */
    s = mlc_sched_new(f, 1);
    ok = cut_tile(s, sh[0], sh[1], sh[2] / 2, &tile, &err);
    CHECK_MSG(ok, "%s", err.msg);
    sched_snapshot snap = sched_snap(s);
    CHECK(!mlc_sched_tensorize(s, tile, member(sh[0], sh[1], sh[2] / 2), &err));
    CHECK_MSG(strstr(err.msg, "reduction mismatch") && strstr(err.msg, "decompose_reduction first"), "%s",
              err.msg);
    /* the plain member on the block with its init */
    family = amx ? "dense_u8i8i32_amx" : "dense_u8i8i32_vnni";
    CHECK(!mlc_sched_tensorize(s, tile, member(sh[0], sh[1], sh[2] / 2), &err));
    CHECK_MSG(strstr(err.msg, "has an init"), "%s", err.msg);
    CHECK(sched_unchanged(s, &snap));
    mlc_sched_free(s);

    /* a decomposed update has no init for the _init member to compute */
    s = mlc_sched_new(f, 1);
    family = amx ? "dense_u8i8i32_amx_init" : "dense_u8i8i32_vnni_init";
    CHECK(!schedule_block(s, sh[0], sh[1], sh[2], member(sh[0], sh[1], sh[2]), false, &err));
    CHECK_MSG(strstr(err.msg, "computes an init"), "%s", err.msg);
    mlc_sched_free(s);
    mlc_arena_free(a);
  }
  family = "dense_u8i8i32_vnni";
}

/* The cost model sees a tensorized call: one feature row for it besides
 * the init's, whose int multiply-adds are the whole product's (the calls
 * times each call's R x C x K), for two tile shapes alike; the one-step
 * intrinsic's calls count 64 each. */
static void test_features(void) {
  if (!have_vnni) return;
  static const int64_t shapes[][3] = {{4, 32, 16}, {2, 64, 128}, {0, 16, 4}};
  int64_t M = 32, N = 64, K = 128;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, M, N, K);
  for (int t = 0; t < MLC_COUNTOF(shapes); t++) {
    const int64_t *sh = shapes[t];
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    bool ok = sh[0] ? schedule_block(s, sh[0], sh[1], sh[2], NULL, false, &err)
                    : schedule(s, 16, false, false, &err);
    CHECK_MSG(ok, "%s", err.msg);
    mlc_features ft;
    CHECK_MSG(ok && mlc_features_extract(mlc_sched_func(s), &ft, &err), "%s", err.msg);
    if (ok) {
      CHECK_MSG(ft.n_stores == 2, "%d feature rows", ft.n_stores);
      double want = log2((double)(M * N * K) + 1), got = 0;
      for (int r = 0; r < ft.n_stores; r++)
        if (ft.rows[(size_t)r * MLC_FEATURE_DIM + 7] > got) got = ft.rows[(size_t)r * MLC_FEATURE_DIM + 7];
      /* the index arithmetic adds a few multiply-adds per call (under 5% for the one-step calls) */
      CHECK_MSG(got > want - 1e-3 && got < want + 0.1, "shape %d: int_mad %g, want %g", t, got, want);
      mlc_features_free(&ft);
    }
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* The builtin's shape arguments must be constants in range: a hand-written
 * call with R = 17 is refused at build time. */
static void test_block_builtin_check(void) {
  if (!have_vnni) return;
  static const char text[] =
      "@T.prim_func\n"
      "def main(a: T.handle, b: T.handle, c: T.handle):\n"
      "    A = T.match_buffer(a, (17, 4), \"uint8\")\n"
      "    B = T.match_buffer(b, (1, 1, 16, 4), \"int8\")\n"
      "    C = T.match_buffer(c, (17, 16), \"int32\")\n"
      "    T.evaluate(T.call_extern(\"int32\", \"mlc_x86_vpdpbusd_block\", C.access_ptr(\"rw\"), "
      "A.access_ptr(\"r\"), B.access_ptr(\"r\"), C.strides[0], A.strides[0], B.strides[0], "
      "B.strides[1], B.strides[2], 17, 1, 4))\n";
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "<test>", text, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_jit_lib *lib = m ? build("llvm", m->funcs[0], "bad_block", NULL, &err) : NULL;
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "R (rows), must be a constant in [1, 16]"), "%s", err.msg);
  mlc_jit_unload(lib);
  mlc_arena_free(a);
}

/* A target whose CPU lacks the instruction refuses the tensorized
 * function at build time (LLVM would fail to select it). */
static void test_target_without_vnni(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, 2, 16, 8);
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  CHECK_MSG(schedule(s, 16, false, false, &err), "%s", err.msg);
  mlc_jit_lib *lib = build("llvm -mcpu=x86-64", mlc_sched_func(s), "dense_x86_64", NULL, &err);
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "needs the CPU feature +avx512vnni"), "%s", err.msg);
  mlc_jit_unload(lib);
  mlc_sched_free(s);
  s = mlc_sched_new(f, 1);
  CHECK_MSG(schedule_block(s, 2, 16, 8, NULL, false, &err), "%s", err.msg);
  lib = build("llvm -mcpu=x86-64", mlc_sched_func(s), "dense_x86_64_mk", NULL, &err);
  CHECK(lib == NULL);
  CHECK_MSG(strstr(err.msg, "mlc_x86_vpdpbusd_block needs the CPU feature +avx512vnni"), "%s", err.msg);
  mlc_jit_unload(lib);
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* The CPU design space tiles dense_int8 around the micro-kernel family:
 * every sketch's samples are tensorized, verify and compute exactly, and
 * their traces, written as JSON and read back, replay on a fresh copy to
 * the same function. The samples cover more than one tile shape. */
static void check_space(int64_t m, int64_t n_, int64_t k, const char *builtin, const char *cpu_features) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, m, n_, k);
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  o.cpu_features = cpu_features;
  mlc_error err;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  int n = sp ? mlc_tuner_space_count(sp) : 0, tensorized = 0, n_shapes = 0, with_init = 0;
  char shapes[16][64];
  enum { SEEDS = 8 };
  CHECK(n >= 1);
  for (int i = 0; i < n; i++)
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i, seed, &err);
      CHECK_MSG(s != NULL, "sketch %d: %s", i, err.msg);
      if (!s) continue;
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      tensorized += strstr(text.data, builtin) != NULL;
      mlc_str_free(&text);
      /* the member it used, from the trace */
      const mlc_trace *tr = mlc_sched_trace(s);
      for (int q = 0; q < tr->insts.len; q++) {
        const mlc_inst *in = &tr->insts.data[q];
        if (in->kind != MLC_INST_TENSORIZE) continue;
        with_init += strstr(in->attrs[0].s, "_init_") != NULL;
        int z = 0;
        while (z < n_shapes && strcmp(shapes[z], in->attrs[0].s) != 0) z++;
        if (z == n_shapes && n_shapes < 16) snprintf(shapes[n_shapes++], 64, "%s", in->attrs[0].s);
      }
      /* the trace round trip */
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
      mlc_array args[3];
      fill(f, args, seed);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      int bad = count_wrong(args);
      CHECK_MSG(bad == 0, "sketch %d seed %llu: %d outputs wrong", i, (unsigned long long)seed, bad);
      free_args(args);
      mlc_sched_free(s);
    }
  CHECK_MSG(tensorized == SEEDS * n, "%d of %d samples tensorized", tensorized, SEEDS * n);
  CHECK_MSG(n_shapes >= 2, "%d micro-kernel shapes sampled", n_shapes);
  /* a tile of the whole reduction (K among the sampled sizes) takes the
   * init in: the postprocessor's _init member */
  CHECK_MSG(with_init >= 1, "no sample tensorized with an _init member");
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* M = 24 is no multiple of AMX's 16 rows: the VNNI family (on any host
 * with VNNI); M = 32: AMX where the host has it. */
static void test_design_space(void) {
  if (!have_vnni) return;
  check_space(24, 64, 64, "mlc_x86_vpdpbusd_block", NULL);
  if (have_amx) check_space(32, 64, 256, "mlc_x86_tdpbusd_block", NULL);
}

/* Tuning for a VNNI-only CPU in a process that registered AMX too (the
 * host's, as mlc-worker and mlc-db do): the space keeps to the target's
 * instructions, where every AMX candidate failed to build. */
static void test_design_space_target_features(void) {
  if (!have_vnni) return;
  mlc_error err;
  CHECK_MSG(mlc_tensor_intrin_register_cpu("+amx-int8,+amx-tile", NULL, &err), "%s", err.msg);
  check_space(32, 64, 256, "mlc_x86_vpdpbusd_block", "+avx512vnni");
}

/* The default schedule (an untuned build) tiles dense_int8 around the
 * micro-kernel the target has: the VNNI family for a VNNI-only CPU, AMX
 * where the features have it; exact on the interpreter and compiled; a
 * CPU with neither keeps the register tile. */
static void check_default(int64_t m, int64_t n_, int64_t k, const char *features, const char *builtin) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, m, n_, k);
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule_for(a, f, features);
  mlc_error err;
  CHECK_MSG(mlc_verify_func(g, &err), "%s", err.msg);
  mlc_str text = {0};
  mlc_print_func(&text, g);
  bool tensorized = strstr(text.data, "mlc_x86_") != NULL;
  CHECK_MSG(builtin ? strstr(text.data, builtin) != NULL : !tensorized, "%s: %s expected", features,
            builtin ? builtin : "no intrinsic");
  CHECK_MSG(!builtin || strstr(text.data, "T.parallel") != NULL, "%s: no parallel loop", features);
  mlc_str_free(&text);
  mlc_array args[3];
  fill(f, args, 5);
  CHECK_MSG(mlc_interp_run(g, args, &err), "%s", err.msg);
  CHECK(count_wrong(args) == 0);
  free_args(args);
  mlc_target t;
  mlc_target_host(&t);
  mlc_object obj;
  const char *sym = "dense_int8_default";
  bool built = mlc_target_build(&t, 1, (const mlc_prim_func *[]){g}, &sym, NULL, &obj, &err);
  CHECK_MSG(built, "%s", err.msg);
  if (built) {
    mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, sym, &err) : NULL;
    CHECK_MSG(fn, "%s", err.msg);
    if (fn) {
      fill(f, args, 6);
      CHECK(mlc_kernel_call(fn, 3, args) == 0 && count_wrong(args) == 0);
      free_args(args);
    }
    if (lib) mlc_jit_unload(lib);
    mlc_object_free(&obj);
  }
  mlc_arena_free(a);
}

static void test_default_schedule(void) {
  if (!have_vnni) return;
  check_default(24, 64, 64, "+avx512vnni", "mlc_x86_vpdpbusd_block");
  check_default(24, 64, 64, "+avx2", NULL);
  if (have_amx) check_default(64, 64, 256, mlc_target_host_features(), "mlc_x86_tdpbusd_block");
}

/* Members past the registry's room are unknown names, not a crash; the
 * registered ones stay. (Runs last: it fills the process-wide table.) */
static void test_registry_full(void) {
  if (!have_vnni) return;
  char name[64];
  int n = 0;
  bool full = false;
  for (int k = 4; k <= 4096 && !full; k += 4, n++) {
    snprintf(name, sizeof name, "dense_u8i8i32_vnni_3x16x%d", k);
    full = !mlc_tensor_intrin_exists(name);
  }
  CHECK_MSG(full && n > 100 && n <= 560, "full after %d members", n);
  CHECK(mlc_tensor_intrin_exists("dense_u8i8i32_vnni_3x16x4") && mlc_tensor_intrin_exists(INTRIN));
  CHECK(!mlc_tensor_intrin_exists(name));
}

int main(void) {
  RUN(test_register);
  RUN(test_feature_query);
  RUN(test_interp);
  RUN(test_refusals);
  RUN(test_block_interp);
  RUN(test_block_refusals);
  RUN(test_compiled);
  RUN(test_block_compiled);
  RUN(test_block_builtin_check);
  RUN(test_amx);
  RUN(test_init_members);
  RUN(test_features);
  RUN(test_target_without_vnni);
  RUN(test_design_space);
  RUN(test_design_space_target_features);
  RUN(test_default_schedule);
  RUN(test_registry_full);
  return test_summary();
}
