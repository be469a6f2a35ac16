/* Matmul 1024^3 float32 on this machine, all in one run:
 *   openblas_<T>t      cblas_sgemm with T threads (the baseline of ratios)
 *   unscheduled        the matmul task as written, through our backend
 *   gcc_O3_naive       the same loop nest in C, gcc -O3 -march=native
 *   hand_scheduled     bench/kernels/matmul_1024.py through our backend
 *   compile times      lower + LLVM O3 + object of the unscheduled task and
 *                      of the hand-scheduled kernel (median of 5)
 * Each result is checked against OpenBLAS's (allclose, rtol 1e-3,
 * atol 1e-3 * max |ref|) before it is reported.
 *
 *   bench_matmul [--results FILE] [--threads T] [--quick]
 * --quick skips the slow unscheduled and gcc cases.
 */
#include "bench/results.h"
#include "targets/targets.h"
#include "tasks/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

void openblas_set_num_threads(int n);
void bench_naive_matmul(int n, const float *A, const float *B, float *C);

#define N 1024
#define FLOPS (2.0 * N * N * N)
#define KERNEL_FILE "bench/kernels/matmul_1024.py"
#define ROUNDS 7
#define ROUNDS_STR "7"

static float *A, *B, *C, *Cref;

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_matmul: error: %s: %s\n", what, msg);
  exit(1);
}

static void run_openblas(void *ctx) {
  MLC_UNUSED(ctx);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N);
}

static void run_naive(void *ctx) {
  MLC_UNUSED(ctx);
  bench_naive_matmul(N, A, B, C);
}

static void run_kernel(void *ctx) {
  void *args[3] = {A, B, C};
  ((mlc_kernel_fn)ctx)(args);
}

/* C against Cref (OpenBLAS). */
static void check_result(const char *what) {
  double scale = 0, worst = 0;
  for (int i = 0; i < N * N; i++) scale = fmax(scale, fabs(Cref[i]));
  for (int i = 0; i < N * N; i++) {
    double d = fabs((double)C[i] - Cref[i]);
    if (!(d <= 1e-3 * scale + 1e-3 * fabs(Cref[i]))) {
      char msg[200];
      snprintf(msg, sizeof msg, "result differs from OpenBLAS at %d: %g vs %g", i, C[i], Cref[i]);
      die(what, msg);
    }
    worst = fmax(worst, d);
  }
  fprintf(stderr, "  %s: max |C - C_openblas| = %.3g\n", what, worst);
  memset(C, 0, sizeof(float) * N * N);
}

typedef struct built {
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
  double compile_ms;
} built;

/* Build f (median compile time of `times` builds), load it. */
static built build(const mlc_target *t, const mlc_prim_func *f, const char *sym, int times) {
  built b = {0};
  mlc_error err;
  double ms[8];
  for (int i = 0; i < times; i++) {
    mlc_object_free(&b.obj);
    double t0 = bench_now_ms();
    if (!mlc_target_build(t, 1, &f, &sym, NULL, &b.obj, &err)) die(sym, err.msg);
    ms[i] = bench_now_ms() - t0;
  }
  b.compile_ms = bench_median(ms, times);
  b.lib = mlc_jit_load(&b.obj, &err);
  b.fn = b.lib ? mlc_jit_lookup(b.lib, sym, &err) : NULL;
  if (!b.fn) die(sym, err.msg);
  return b;
}

static double gflops(double ms) { return FLOPS / (ms * 1e6); }

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  const char *results = "bench/results.json";
  int threads = mlc_target_host_cores();
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fprintf(stderr, "usage: bench_matmul [--results FILE] [--threads T] [--quick]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  mlc_target t;
  char tstr[64];
  snprintf(tstr, sizeof tstr, "llvm -num-cores=%d", threads);
  if (!mlc_target_parse(tstr, &t, &err)) die("target", err.msg);
  openblas_set_num_threads(threads);

  A = mlc_xmalloc(sizeof(float) * N * N);
  B = mlc_xmalloc(sizeof(float) * N * N);
  C = mlc_xmalloc(sizeof(float) * N * N);
  Cref = mlc_xmalloc(sizeof(float) * N * N);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 1, 0);
  for (int i = 0; i < N * N; i++) A[i] = mlc_pcg32_uniform(&rng, -1, 1);
  for (int i = 0; i < N * N; i++) B[i] = mlc_pcg32_uniform(&rng, -1, 1);

  char base[32];
  snprintf(base, sizeof base, "openblas_%dt", threads);
  run_openblas(NULL);
  memcpy(Cref, C, sizeof(float) * N * N);

  /* Hand-scheduled TVMScript. */
  char *text = mlc_read_file(KERNEL_FILE, NULL, &err);
  if (!text) die(KERNEL_FILE, err.msg);
  mlc_module *m = mlc_parse_module(a, KERNEL_FILE, text, &err);
  mlc_free(text);
  if (!m || !mlc_verify_module(m, &err)) die(KERNEL_FILE, err.msg);
  built hand = build(&t, m->funcs[0], "bench_hand", 5);
  run_kernel((void *)hand.fn);
  check_result("hand_scheduled");

  /* OpenBLAS and the hand-scheduled kernel in alternating rounds, so both
   * see the same machine load; a pause after each lets the other's worker
   * threads stop spinning. */
  double tb[ROUNDS], th[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    tb[r] = gflops(bench_time_ms(run_openblas, NULL, 1, 300));
    usleep(200000);
    th[r] = gflops(bench_time_ms(run_kernel, (void *)hand.fn, 1, 300));
    usleep(200000);
  }
  double blas = bench_median(tb, ROUNDS), hand_gf = bench_median(th, ROUNDS);

  MLC_VEC(bench_case) cases = {0};
  bench_case c0 = {mlc_arena_printf(a, "matmul_1024_%s", base), blas, "GFLOP/s", base, blas,
                   "cblas_sgemm, row-major; median of " ROUNDS_STR " rounds alternating with "
                   "the hand-scheduled kernel"};
  bench_case c1 = {"matmul_1024_hand_scheduled", hand_gf, "GFLOP/s", base, blas,
                   KERNEL_FILE ": packed B, 4x16 register tile, parallel over 64-row blocks; "
                   "median of " ROUNDS_STR " rounds"};
  bench_case c2 = {"compile_ms_matmul_1024_hand_scheduled", hand.compile_ms, "ms", NULL, 0,
                   "lower + LLVM O3 + object, median of 5"};
  MLC_VEC_PUSH(cases, c0);
  MLC_VEC_PUSH(cases, c1);
  MLC_VEC_PUSH(cases, c2);
  bench_print(&c0);
  bench_print(&c1);
  bench_print(&c2);

  /* Unscheduled task: compile time always; run time unless --quick. */
  int64_t shape[3] = {N, N, N};
  mlc_prim_func *f = mlc_task_build(a, mlc_task_find("matmul"), shape);
  built un = build(&t, f, "bench_unscheduled", 5);
  bench_case c3 = {"compile_ms_matmul_1024_unscheduled", un.compile_ms, "ms", NULL, 0,
                   "lower + LLVM O3 + object, median of 5"};
  MLC_VEC_PUSH(cases, c3);
  bench_print(&c3);
  if (!quick) {
    double ms[3];
    for (int r = 0; r < 3; r++) {
      double t0 = bench_now_ms();
      run_kernel((void *)un.fn);
      ms[r] = bench_now_ms() - t0;
      if (r == 0) check_result("unscheduled");
    }
    bench_case c4 = {"matmul_1024_unscheduled", gflops(bench_median(ms, 3)), "GFLOP/s", base, blas,
                     "the matmul task as written (i, j, k loops), median of 3 calls"};
    MLC_VEC_PUSH(cases, c4);
    bench_print(&c4);
    for (int r = 0; r < 3; r++) {
      double t0 = bench_now_ms();
      run_naive(NULL);
      ms[r] = bench_now_ms() - t0;
      if (r == 0) check_result("gcc_O3_naive");
    }
    bench_case c5 = {"matmul_1024_gcc_O3_naive", gflops(bench_median(ms, 3)), "GFLOP/s", base, blas,
                     "the same loop nest in C, gcc -O3 -march=native, one thread, median of 3"};
    MLC_VEC_PUSH(cases, c5);
    bench_print(&c5);
  }
  bool ok = bench_write_results(results, cases.len, cases.data, &err);
  if (!ok) fprintf(stderr, "bench_matmul: error: %s\n", err.msg);
  MLC_VEC_FREE(cases);
  mlc_jit_unload(hand.lib);
  mlc_jit_unload(un.lib);
  mlc_object_free(&hand.obj);
  mlc_object_free(&un.obj);
  mlc_free(A);
  mlc_free(B);
  mlc_free(C);
  mlc_free(Cref);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
