/* Tuning matmul on this machine, all in one run:
 *   tuned_<N>_<T>     best kernel after T trials of mlc_tuner_tune (the
 *                     loop behind mlc-tune) on a fresh database, re-timed
 *                     here in alternating rounds with OpenBLAS
 *   openblas_<N>      cblas_sgemm, same rounds (the baseline of ratios)
 *   tune_wall_s       tuning wall time; tune_other_share: the share of it
 *                     spent outside building and running candidates
 *                     (search, cost model, database)
 *   search_ms_round   one search round: a 64-candidate batch from a
 *                     population of 512 over 4 generations
 * for N = 512 and 1024, T = 64 and 512 (the 512-trial budget resumes the
 * 64-trial database). MLC_BENCH_QUICK=1 skips the 512-trial cases.
 *
 *   bench_tune [--results FILE] [--sizes 512,1024]
 */
#include "bench/results.h"
#include "db/db.h"
#include "measure/measure.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner_internal.h" /* the search and design spaces */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

void openblas_set_num_threads(int n);

#define ROUNDS 5

static int N;
static float *A, *B, *C, *Cref;

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_tune: error: %s: %s\n", what, msg);
  exit(1);
}

static void run_openblas(void *ctx) {
  MLC_UNUSED(ctx);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N);
}

static void run_kernel(void *ctx) {
  void *args[3] = {A, B, C};
  ((mlc_kernel_fn)ctx)(args);
}

static double gflops(double ms) { return 2.0 * N * N * N / (ms * 1e6); }

/* ---- measuring through the worker pool, timed ------------------------------------ */

typedef struct timed_pool {
  mlc_measure *pool;
  double wall_s; /* inside build-and-run calls */
} timed_pool;

static bool timed_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                          mlc_error *err) {
  timed_pool *tp = ud;
  double t0 = bench_now_ms();
  bool ok = mlc_measure_run_batch(tp->pool, n, c, out, NULL, NULL, err);
  tp->wall_s += (bench_now_ms() - t0) * 1e-3;
  return ok;
}

/* ---- one size ---------------------------------------------------------------------- */

typedef struct tuned {
  double wall_s, other_share, search_ms_round;
  int errors, too_slow, measured;
} tuned;

/* Tune f in db up to `trials` records. */
static tuned tune_to(mlc_db *db, const mlc_prim_func *f, const char *shape, double flops,
                     int trials) {
  timed_pool tp = {0};
  mlc_error err;
  mlc_measure_opts mo = mlc_measure_defaults();
  tp.pool = mlc_measure_new(&mo, &err);
  if (!tp.pool) die("measure", err.msg);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = "matmul";
  o.shape = shape;
  o.flops = flops;
  o.trials = trials;
  o.measure = timed_measure;
  o.measure_ud = &tp;
  mlc_tuner_tune_result r;
  if (!mlc_tuner_tune(db, f, &o, &r, &err)) die("tune", err.msg);
  mlc_measure_free(tp.pool);
  tuned t = {.wall_s = r.total_sec, .errors = r.errors, .too_slow = r.too_slow,
             .measured = r.measured};
  t.other_share = r.total_sec > 0 ? fmax(0, r.total_sec - tp.wall_s) / r.total_sec : 0;
  t.search_ms_round = r.rounds ? 1e3 * r.search_sec / r.rounds : 0;
  fprintf(stderr, "  %s to %d trials: %d measured (%d errors, %d stopped early), %.0f s, "
          "best in tuning %.2f GFLOP/s\n",
          shape, trials, r.measured, r.errors, r.too_slow, r.total_sec, r.best_gflops);
  return t;
}

/* The best record's kernel, built and loaded here. */
static mlc_jit_lib *load_best(mlc_db *db, const mlc_prim_func *f, mlc_kernel_fn *fn) {
  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  int64_t wid;
  mlc_db_record *top;
  char target[256];
  mlc_db_normalize_target("llvm", target, sizeof target);
  if (mlc_db_find_workload(db, f, &wid, &err) != 1) die("workload", "not in the database");
  if (mlc_db_top_k(db, wid, target, 1, a, &top, &err) != 1) die("best record", "none");
  mlc_trace *t = mlc_trace_from_json(a, top[0].trace, strlen(top[0].trace), &err);
  mlc_tuner_opts so;
  mlc_tuner_opts_default(&so);
  mlc_sched *s = t ? mlc_tuner_apply_trace(f, t, &so, &err) : NULL;
  if (!s) die("best record", err.msg);
  mlc_target tgt;
  mlc_target_host(&tgt);
  const mlc_prim_func *g = mlc_sched_func(s);
  const char *sym = "bench_tuned";
  mlc_object obj = {0};
  mlc_jit_lib *lib = NULL;
  if (!mlc_target_build(&tgt, 1, &g, &sym, NULL, &obj, &err) || !(lib = mlc_jit_load(&obj, &err)) ||
      !(*fn = mlc_jit_lookup(lib, sym, &err)))
    die("build best", err.msg);
  mlc_object_free(&obj);
  mlc_sched_free(s);
  mlc_arena_free(a);
  return lib;
}

static void check_result(const char *what) {
  double scale = 0;
  for (int i = 0; i < N * N; i++) scale = fmax(scale, fabs(Cref[i]));
  for (int i = 0; i < N * N; i++)
    if (!(fabs((double)C[i] - Cref[i]) <= 1e-3 * scale + 1e-3 * fabs(Cref[i])))
      die(what, "result differs from OpenBLAS");
  memset(C, 0, sizeof(float) * (size_t)N * (size_t)N);
}

/* Median GFLOP/s of the tuned kernel and of OpenBLAS in alternating rounds. */
static void time_against_blas(mlc_kernel_fn fn, double *tuned_gf, double *blas_gf) {
  run_kernel((void *)fn);
  check_result("tuned kernel");
  double tb[ROUNDS], tk[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    tb[r] = gflops(bench_time_ms(run_openblas, NULL, 1, 200));
    usleep(200000);
    tk[r] = gflops(bench_time_ms(run_kernel, (void *)fn, 1, 200));
    usleep(200000);
  }
  *blas_gf = bench_median(tb, ROUNDS);
  *tuned_gf = bench_median(tk, ROUNDS);
}

/* One search round on a fresh search (random scores): 64 candidates from
 * a population of 512 over 4 generations, median of 3. */
static double search_round_ms(const mlc_prim_func *f) {
  mlc_tuner_opts so;
  mlc_tuner_opts_default(&so);
  so.population = 512;
  so.generations = 4;
  mlc_error err;
  mlc_tuner_search *s = mlc_tuner_search_new(f, &so, &err);
  if (!s) die("search", err.msg);
  double ms[3];
  for (int r = 0; r < 3; r++) {
    mlc_tuner_cand *batch;
    double t0 = bench_now_ms();
    int n = mlc_tuner_search_next_batch(s, 64, &batch, &err);
    ms[r] = bench_now_ms() - t0;
    if (n <= 0) die("search", n < 0 ? err.msg : mlc_tuner_search_message(s));
  }
  mlc_tuner_search_free(s);
  return bench_median(ms, 3);
}

typedef MLC_VEC(bench_case) case_list;

static void push(case_list *cases, bench_case c) {
  bench_print(&c);
  MLC_VEC_PUSH(*cases, c);
}

static void bench_size(mlc_arena *a, int n, bool quick, const char *load0, case_list *cases) {
  N = n;
  size_t nn = (size_t)n * (size_t)n;
  A = mlc_xmalloc(sizeof(float) * nn);
  B = mlc_xmalloc(sizeof(float) * nn);
  C = mlc_xmalloc(sizeof(float) * nn);
  Cref = mlc_xmalloc(sizeof(float) * nn);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 1, 0);
  for (size_t i = 0; i < nn; i++) A[i] = mlc_pcg32_uniform(&rng, -1, 1);
  for (size_t i = 0; i < nn; i++) B[i] = mlc_pcg32_uniform(&rng, -1, 1);
  run_openblas(NULL);
  memcpy(Cref, C, sizeof(float) * nn);

  char shape[64];
  snprintf(shape, sizeof shape, "%d,%d,%d", n, n, n);
  int64_t sh[3] = {n, n, n};
  const mlc_task_def *d = mlc_task_find("matmul");
  mlc_prim_func *f = mlc_task_build(a, d, sh);
  double flops = mlc_task_flops(d, sh);
  char path[] = "/tmp/bench_tune_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) die("mkstemp", "cannot create a temporary database");
  close(fd);
  unlink(path);
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  if (!db) die(path, err.msg);

  static const int BUDGETS[] = {64, 512};
  for (int bi = 0; bi < MLC_COUNTOF(BUDGETS); bi++) {
    int trials = BUDGETS[bi];
    if (trials > 64 && quick) break;
    tuned t = tune_to(db, f, shape, flops, trials);
    mlc_kernel_fn fn;
    mlc_jit_lib *lib = load_best(db, f, &fn);
    double tuned_gf, blas_gf;
    time_against_blas(fn, &tuned_gf, &blas_gf);
    mlc_jit_unload(lib);
    char load[64];
    FILE *la = fopen("/proc/loadavg", "r");
    if (!la || !fgets(load, sizeof load, la)) snprintf(load, sizeof load, "?");
    if (la) fclose(la);
    load[strcspn(load, "\n")] = 0;
    const char *base = mlc_arena_printf(a, "openblas_%d", n);
    const char *notes = mlc_arena_printf(
        a, "best of %d trials (%d failed, %d stopped early as too slow), re-timed here, median "
        "of %d rounds alternating with OpenBLAS; loadavg before %s, after %s",
        trials, t.errors, t.too_slow, ROUNDS, load0, load);
    push(cases, (bench_case){mlc_arena_printf(a, "matmul_%d_openblas_tune%d", n, trials),
                                blas_gf, "GFLOP/s", base, blas_gf,
                                "cblas_sgemm, same rounds as the tuned kernel"});
    push(cases, (bench_case){mlc_arena_printf(a, "matmul_%d_tuned_%d", n, trials), tuned_gf,
                                "GFLOP/s", base, blas_gf, notes});
    push(cases,
         (bench_case){mlc_arena_printf(a, "tune_wall_s_matmul_%d_%d", n, trials), t.wall_s, "s",
                      NULL, 0,
                      mlc_arena_printf(a, "wall time of this run (%d new trials)", t.measured)});
    push(cases,
         (bench_case){mlc_arena_printf(a, "tune_other_share_matmul_%d_%d", n, trials),
                      t.other_share, "share", NULL, 0,
                      "tuning wall time outside building and running candidates (search, cost "
                      "model, database) over the total"});
    push(cases, (bench_case){mlc_arena_printf(a, "tune_search_ms_round_matmul_%d_%d", n, trials),
                                t.search_ms_round, "ms", NULL, 0,
                                "search time per round while tuning (16-candidate rounds below "
                                "128 trials, then 64)"});
  }
  push(cases, (bench_case){mlc_arena_printf(a, "search_ms_round_matmul_%d", n),
                              search_round_ms(f), "ms", NULL, 0,
                              "one round: 64 candidates, population 512, 4 generations, random "
                              "scores; median of 3"});
  mlc_db_close(db);
  unlink(path);
  mlc_free(A), mlc_free(B), mlc_free(C), mlc_free(Cref);
}

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  const char *results = "bench/results.json";
  const char *sizes = "512,1024";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) sizes = argv[++i];
    else {
      fprintf(stderr, "usage: bench_tune [--results FILE] [--sizes 512,1024]\n");
      return 2;
    }
  }
  const char *q = getenv("MLC_BENCH_QUICK");
  bool quick = q && *q && strcmp(q, "0") != 0;
  openblas_set_num_threads(mlc_target_host_cores());
  char load0[64];
  FILE *la = fopen("/proc/loadavg", "r");
  if (!la || !fgets(load0, sizeof load0, la)) snprintf(load0, sizeof load0, "?");
  if (la) fclose(la);
  load0[strcspn(load0, "\n")] = 0;
  mlc_arena *a = mlc_arena_new();
  case_list cases = {0};
  for (const char *p = sizes; *p;) {
    int n = atoi(p);
    if (n < 16 || n > 4096) die("--sizes", "each size must be 16 to 4096");
    bench_size(a, n, quick, load0, &cases);
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  mlc_error err;
  bool ok = bench_write_results(results, cases.len, cases.data, &err);
  if (!ok) fprintf(stderr, "bench_tune: error: %s\n", err.msg);
  MLC_VEC_FREE(cases);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
