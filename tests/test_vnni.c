/* AVX-512 VNNI through tensorize: the dense_int8 task (uint8 x int8 ->
 * int32, weights packed [N/16, K/4, 16, 4]) tiled around the built-in
 * dot_16x4_u8i8i32_vnni intrinsic and tensorized, checked against a plain
 * C reference exactly, in the interpreter (any machine) and compiled (a
 * CPU with AVX-512 VNNI; SKIP otherwise); the intrinsic registered only for
 * a feature list that has the instruction; a target without it refused;
 * timing against the same tiling without tensorize. */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"
#include "tuner/tuner_internal.h"

#include <time.h>

static const char *INTRIN = "dot_16x4_u8i8i32_vnni";
static bool have_vnni; /* the host has it and the intrinsic is registered */

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

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of `reps` calls, in seconds. */
static double best_time(mlc_kernel_fn fn, mlc_array *args, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    (void)mlc_kernel_call(fn, 3, args);
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

/* Build g as `sym` for target text t; NULL with err when refused. (Two
 * live JIT objects need distinct symbols.) */
static mlc_jit_lib *build(const char *target, const mlc_prim_func *g, const char *sym, mlc_str *ir,
                          mlc_error *err) {
  mlc_target t;
  mlc_object obj = {0};
  if (!mlc_target_parse(target, &t, err) || !mlc_target_build(&t, 1, &g, &sym, ir, &obj, err))
    return NULL;
  mlc_jit_lib *lib = mlc_jit_load(&obj, err);
  mlc_object_free(&obj);
  return lib;
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
  mlc_arena_free(a);
}

/* The CPU design space tiles dense_int8 around the intrinsic: every
 * sketch's samples are tensorized, verify and compute exactly. */
static void test_design_space(void) {
  if (!have_vnni) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = dense(a, 16, 64, 32);
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  mlc_error err;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &err);
  CHECK_MSG(sp != NULL, "%s", err.msg);
  int n = sp ? mlc_tuner_space_count(sp) : 0, tensorized = 0;
  CHECK(n >= 1);
  for (int i = 0; i < n; i++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i, seed, &err);
      CHECK_MSG(s != NULL, "sketch %d: %s", i, err.msg);
      if (!s) continue;
      mlc_str text = {0};
      mlc_print_func(&text, mlc_sched_func(s));
      tensorized += strstr(text.data, "mlc_x86_vpdpbusd_16x4") != NULL;
      mlc_str_free(&text);
      mlc_array args[3];
      fill(f, args, seed);
      CHECK_MSG(mlc_interp_run(mlc_sched_func(s), args, &err), "%s", err.msg);
      int bad = count_wrong(args);
      CHECK_MSG(bad == 0, "sketch %d seed %llu: %d outputs wrong", i, (unsigned long long)seed, bad);
      free_args(args);
      mlc_sched_free(s);
    }
  CHECK_MSG(tensorized == 3 * n, "%d of %d samples tensorized", tensorized, 3 * n);
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_register);
  RUN(test_feature_query);
  RUN(test_interp);
  RUN(test_refusals);
  RUN(test_compiled);
  RUN(test_target_without_vnni);
  RUN(test_design_space);
  return test_summary();
}
