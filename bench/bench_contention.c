/* Tuned kernels on a busy machine: matmul 128^3, 512^3 and
 * 1024^3 and the small model (examples/mlp.json), each next to OpenBLAS
 * with as many threads (for the model: the same two dense layers through
 * cblas_sgemm), in these conditions:
 *   quiet          nothing else started by the bench
 *   busy_cpuC      one process spinning, pinned to CPU C (each CPU in turn)
 *   forker         a neighbour that keeps forking children which allocate
 *                  and touch FORK_MB MB and exit (as a fuzzer does)
 * Matmuls are GFLOP/s, the model is latency in us (median of the rounds,
 * ours and OpenBLAS alternating). Each case's baseline is the same kernel
 * quiet: the table gives each one's share of its quiet speed (the goal:
 * at least 45% under one busy neighbour; on a 2-core machine a busy
 * neighbour takes a core's worth, 50%).
 *
 * The kernels are tuned ones, compiled as mlc-compile compiles them (the
 * best record that replays to its stored hash): each matmul shape gets
 * --trials trials of mlc_tuner_tune, the model --trials trials over its
 * kernels with the task scheduler (as `mlc-tune --model`), all into a
 * temporary database, before any neighbour starts. With --db PATH, a
 * kernel whose records are there is compiled from them instead (the file
 * is only read); the others are tuned here.
 *
 *   bench_contention [--results FILE] [--threads T] [--trials N] [--db PATH]
 *                    [--quick]
 * --trials: default 64, or $MLC_BENCH_TRIALS. --quick (or
 * MLC_BENCH_QUICK=1): 512^3 and the model only, 32 trials, 3 rounds. The
 * model's budget is shared by its kernels in rounds of 16: below 32, one
 * of them may stay untuned (the default schedule; the report says so).
 */
#include "bench/results.h"
#include "frontend/frontend.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

void openblas_set_num_threads(int n);

#define MAX_CONDS 10
#define FORK_MB 300
#define MAX_ROUNDS 8
#define MODEL_PATH "examples/mlp.json"
enum { N_SIZES = 3, MAX_KERNELS = N_SIZES + 1 };

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_contention: error: %s: %s\n", what, msg);
  exit(1);
}

/* Where the kernels' records come from: --db (read only), then the
 * temporary database this run tunes into (created on first use). */
typedef struct records {
  mlc_db *user;
  const char *user_path;
  mlc_db *tmp;
  char tmp_path[64];
  int trials;
} records;

static mlc_db *tmp_db(records *rs) {
  mlc_error err;
  if (rs->tmp) return rs->tmp;
  snprintf(rs->tmp_path, sizeof rs->tmp_path, "/tmp/bench_contention_%d.db", (int)getpid());
  bench_remove_db(rs->tmp_path);
  if (!(rs->tmp = mlc_db_open(rs->tmp_path, MLC_DB_CREATE, &err))) die(rs->tmp_path, err.msg);
  return rs->tmp;
}

/* ---- matmul ------------------------------------------------------------------ */

typedef struct matmul {
  int n;
  float *A, *B, *C, *Cref;
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
  int64_t record_id;
  const char *source; /* where the record came from, for the report */
} matmul;

static void run_ours(void *ctx) {
  matmul *k = ctx;
  void *args[3] = {k->A, k->B, k->C};
  k->fn(args);
}

static void run_blas(void *ctx) {
  matmul *k = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k->n, k->n, k->n, 1.0f, k->A, k->n, k->B,
              k->n, 0.0f, k->C, k->n);
}

/* C against OpenBLAS's result (allclose, rtol 1e-3, atol 1e-3 max |ref|). */
static void check_result(matmul *k) {
  size_t nn = (size_t)k->n * k->n;
  double scale = 0;
  for (size_t i = 0; i < nn; i++) scale = fmax(scale, fabs(k->Cref[i]));
  for (size_t i = 0; i < nn; i++)
    if (!(fabs((double)k->C[i] - k->Cref[i]) <= 1e-3 * scale + 1e-3 * fabs(k->Cref[i])))
      die("matmul", "the tuned kernel's result differs from OpenBLAS");
}

/* Tune f (matmul n^3) into the temporary database; says how on stderr and
 * returns the source note. */
static const char *tune_matmul(mlc_arena *a, records *rs, const mlc_prim_func *f, int n,
                               const mlc_target *t) {
  int64_t sh[3] = {n, n, n};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = "matmul";
  o.shape = mlc_arena_printf(a, "%d,%d,%d", n, n, n);
  o.flops = mlc_task_flops(mlc_task_find("matmul"), sh);
  o.trials = rs->trials;
  o.target = t->str;
  o.search.num_cores = t->num_cores;
  mlc_tuner_tune_result r;
  mlc_error err;
  fprintf(stderr, "bench_contention: tuning matmul %d^3: %d trials ...\n", n, rs->trials);
  if (!mlc_tuner_tune(tmp_db(rs), f, &o, &r, &err)) die("tuning", err.msg);
  fprintf(stderr, "bench_contention:   %d measured (%d failed) in %.0f s, best %.1f GFLOP/s\n",
          r.measured, r.errors, r.total_sec, r.best_gflops);
  return mlc_arena_printf(a, "tuned in this run: %d trials, %d failed", r.measured_before +
                          r.measured, r.errors);
}

/* The best trusted record of f, scheduled (mlc-compile's choice); false if
 * db has none. */
static bool best_record(mlc_arena *a, mlc_db *db, const mlc_target *t, const mlc_prim_func *f,
                        mlc_gkernel *k) {
  mlc_error err;
  if (!db) return false;
  if (!mlc_graph_schedule_kernel(a, db, t->str, f, true, k, &err)) die("database", err.msg);
  if (k->note[0]) fprintf(stderr, "bench_contention: note: %s\n", k->note);
  return k->record_id != 0;
}

static void matmul_init(mlc_arena *a, matmul *k, int n, const mlc_target *t, records *rs) {
  mlc_error err;
  size_t nn = (size_t)n * n;
  k->n = n;
  k->A = mlc_xmalloc(sizeof(float) * nn);
  k->B = mlc_xmalloc(sizeof(float) * nn);
  k->C = mlc_xmalloc(sizeof(float) * nn);
  k->Cref = mlc_xmalloc(sizeof(float) * nn);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, (uint64_t)n, 0);
  for (size_t i = 0; i < nn; i++) k->A[i] = mlc_pcg32_uniform(&rng, -1, 1);
  for (size_t i = 0; i < nn; i++) k->B[i] = mlc_pcg32_uniform(&rng, -1, 1);
  run_blas(k);
  memcpy(k->Cref, k->C, sizeof(float) * nn);

  int64_t sh[3] = {n, n, n};
  const mlc_prim_func *f = mlc_task_build(a, mlc_task_find("matmul"), sh);
  mlc_gkernel g;
  if (best_record(a, rs->user, t, f, &g)) k->source = mlc_arena_printf(a, "from %s", rs->user_path);
  else {
    k->source = tune_matmul(a, rs, f, n, t);
    if (!best_record(a, rs->tmp, t, f, &g)) die("matmul", "tuning left no record to compile");
  }
  k->record_id = g.record_id;
  const char *sym = mlc_arena_printf(a, "contention_matmul_%d", n); /* JIT symbols are process-wide */
  if (!mlc_target_build(t, 1, &g.sched, &sym, NULL, &k->obj, &err)) die("build", err.msg);
  k->lib = mlc_jit_load(&k->obj, &err);
  k->fn = k->lib ? mlc_jit_lookup(k->lib, sym, &err) : NULL;
  if (!k->fn) die("load", err.msg);
  memset(k->C, 0, sizeof(float) * nn);
  run_ours(k);
  check_result(k);
}

static void matmul_free(matmul *k) {
  mlc_jit_unload(k->lib);
  mlc_object_free(&k->obj);
  mlc_free(k->A);
  mlc_free(k->B);
  mlc_free(k->C);
  mlc_free(k->Cref);
}

/* ---- the model ------------------------------------------------------------------ */

typedef struct model {
  mlc_gmodule *m, *ref;
  bench_variant v;
  bench_model_io io;
  /* OpenBLAS's MLP: x @ w0^T + b0, relu, @ w1^T + b1 */
  const mlc_gvar *w[4]; /* w0, b0, w1, b1 */
  int n_in, n_hid, n_out;
  float *hid;
  const char *source;
} model;

static const mlc_gvar *weight(const mlc_gmodule *m, const char *name, int ndim) {
  for (int i = 0; i < m->n_consts; i++)
    if (strcmp(m->consts[i]->name, name) == 0 && m->consts[i]->type.ndim == ndim)
      return m->consts[i];
  die(MODEL_PATH, "not the MLP this bench knows (weights w0, b0, w1, b1)");
  return NULL;
}

static void run_model_blas(void *ctx) {
  model *md = ctx;
  const float *x = md->io.in[0]->data, *w0 = md->w[0]->data, *b0 = md->w[1]->data;
  const float *w1 = md->w[2]->data, *b1 = md->w[3]->data;
  float *y = md->io.out[0]->data;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, md->n_hid, md->n_in, 1.0f, x, md->n_in,
              w0, md->n_in, 0.0f, md->hid, md->n_hid);
  for (int i = 0; i < md->n_hid; i++) md->hid[i] = fmaxf(md->hid[i] + b0[i], 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, md->n_out, md->n_hid, 1.0f, md->hid,
              md->n_hid, w1, md->n_hid, 0.0f, y, md->n_out);
  for (int i = 0; i < md->n_out; i++) y[i] += b1[i];
}

static void run_model_ours(void *ctx) {
  model *md = ctx;
  bench_variant_run(&md->v);
  if (md->v.failed) die("mlp", md->v.err.msg);
}

/* The model compiled from records of db (the default schedule for a
 * kernel without one); with all, false (nothing kept) unless every kernel
 * replays a record. */
static bool model_build(mlc_arena *a, model *md, const mlc_target *t, mlc_db *db, bool all) {
  mlc_error err;
  md->v = (bench_variant){.name = "contention_mlp", .m = md->m};
  if (!bench_variant_build(a, &md->v, t, db, true, "bench_contention", &err)) die("mlp", err.msg);
  if (!all || md->v.n_tuned == md->v.n) return true;
  bench_variant_free(&md->v);
  return false;
}

static void model_init(mlc_arena *a, model *md, const mlc_target *t, records *rs) {
  mlc_error err;
  md->m = mlc_graph_load(MODEL_PATH, NULL, &err);
  md->ref = md->m ? mlc_graph_load(MODEL_PATH, NULL, &err) : NULL;
  if (!md->ref || !mlc_graph_run_pipeline(md->m, NULL, NULL, NULL, &err)) die(MODEL_PATH, err.msg);
  if (rs->user && model_build(a, md, t, rs->user, true))
    md->source = mlc_arena_printf(a, "from %s", rs->user_path);
  else {
    mlc_db *db = tmp_db(rs);
    if (!bench_tune_model(rs->tmp_path, md->m, t, rs->trials, "bench_contention", &err))
      die(MODEL_PATH, err.msg);
    model_build(a, md, t, db, false); /* a small budget may leave a kernel untuned */
    md->source = mlc_arena_printf(a, "tuned in this run: %d trials over %d kernels", rs->trials,
                                  md->v.n);
  }
  if (!bench_model_io_new(a, md->m, md->ref, &md->io, &err)) die(MODEL_PATH, err.msg);
  if (!bench_variant_check(&md->v, &md->io, &err)) die(MODEL_PATH, err.msg);
  static const char *const NAMES[4] = {"w0", "b0", "w1", "b1"};
  for (int i = 0; i < 4; i++) md->w[i] = weight(md->ref, NAMES[i], i % 2 ? 1 : 2);
  md->n_hid = (int)md->w[0]->type.shape[0];
  md->n_in = (int)md->w[0]->type.shape[1];
  md->n_out = (int)md->w[2]->type.shape[0];
  if (md->io.n_in != 1 || md->io.n_out != 1 || mlc_array_numel(md->io.in[0]) != md->n_in ||
      mlc_array_numel(md->io.out[0]) != md->n_out || md->w[2]->type.shape[1] != md->n_hid)
    die(MODEL_PATH, "not the MLP this bench knows (batch 1, two dense layers)");
  md->hid = mlc_xmalloc(sizeof(float) * (size_t)md->n_hid);
  memset(md->io.out[0]->data, 0, sizeof(float) * (size_t)md->n_out);
  run_model_blas(md);
  if (!bench_model_io_check(&md->io, &err)) die("mlp through OpenBLAS", err.msg);
}

static void model_free(model *md) {
  bench_variant_free(&md->v);
  bench_model_io_free(&md->io);
  mlc_free(md->hid);
  mlc_graph_free(md->m);
  mlc_graph_free(md->ref);
}

/* ---- neighbours ------------------------------------------------------------ */

static void spin_forever(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  volatile uint64_t x = 0;
  for (;;) x++;
}

/* Fork children that allocate FORK_MB MB, touch every page and exit. */
static void fork_forever(void) {
  for (;;) {
    pid_t c = fork();
    if (c == 0) {
      size_t bytes = (size_t)FORK_MB << 20;
      char *p = malloc(bytes);
      if (p)
        for (size_t i = 0; i < bytes; i += 4096) p[i] = (char)i;
      _exit(p ? 0 : 1);
    }
    if (c > 0) waitpid(c, NULL, 0);
    else usleep(1000);
  }
}

/* Condition i: 0 quiet, 1..ncpu busy on CPU i-1, ncpu+1 the forker. */
static pid_t start_neighbour(int cond, int ncpu, const int *cpus) {
  if (cond == 0) return 0;
  pid_t pid = fork();
  if (pid < 0) die("fork", "cannot start the neighbour");
  if (pid == 0) {
    if (cond <= ncpu) spin_forever(cpus[cond - 1]);
    fork_forever();
  }
  usleep(300000); /* let it get going */
  return pid;
}

static void stop_neighbour(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  usleep(200000);
}

/* ---- timing and the report ---------------------------------------------------- */

/* One kernel of the table: a matmul (GFLOP/s) or the model (us). */
typedef struct row {
  const char *name; /* "matmul_512", "mlp" */
  bool latency;     /* values in us, lower is faster */
  void (*run[2])(void *ctx); /* ours, OpenBLAS */
  void *ctx;
  double flops;     /* matmul: per call */
  int64_t record_id;
  int n_records;    /* kernels compiled from records */
  const char *source;
  double v[MAX_CONDS][2]; /* per condition: ours, OpenBLAS */
} row;

/* Median over rounds, ours and OpenBLAS alternating. */
static void time_row(row *r, int cond, int rounds) {
  double v[2][MAX_ROUNDS];
  for (int i = 0; i < rounds; i++)
    for (int w = 0; w < 2; w++) {
      double ms = bench_time_ms(r->run[w], r->ctx, 1, 200);
      v[w][i] = r->latency ? ms * 1e3 : r->flops / (ms * 1e6);
    }
  for (int w = 0; w < 2; w++) r->v[cond][w] = bench_median(v[w], rounds);
}

/* Share of the quiet speed kept in condition cond. */
static double kept(const row *r, int cond, int w) {
  double q = r->v[0][w], x = r->v[cond][w];
  if (q <= 0 || x <= 0) return 0;
  return r->latency ? q / x : x / q;
}

static const char *cond_name(mlc_arena *a, int cond, int ncpu, const int *cpus) {
  return cond == 0 ? "quiet" : cond <= ncpu ? mlc_arena_printf(a, "busy_cpu%d", cpus[cond - 1])
                                           : "forker";
}

static void print_table(mlc_arena *a, const row *rows, int nr, int nconds, int ncpu,
                        const int *cpus, int threads) {
  printf("\n%-12s %-11s %12s %8s %12s %8s\n", "kernel", "condition", "ours", "% quiet",
         mlc_arena_printf(a, "OpenBLAS %dt", threads), "% quiet");
  for (int i = 0; i < nr; i++)
    for (int c = 0; c < nconds; c++) {
      const char *unit = rows[i].latency ? "us" : "GF/s";
      printf("%-12s %-11s %7.2f %-4s %7.0f%% %7.2f %-4s %7.0f%%\n", rows[i].name,
             cond_name(a, c, ncpu, cpus), rows[i].v[c][0], unit, 100 * kept(&rows[i], c, 0),
             rows[i].v[c][1], unit, 100 * kept(&rows[i], c, 1));
    }
  /* The goal: at least 45% of the quiet speed under one busy neighbour. */
  int met = 0, n = 0;
  double worst = 2;
  const char *worst_at = "";
  for (int i = 0; i < nr; i++)
    for (int c = 1; c <= ncpu; c++) {
      double k = kept(&rows[i], c, 0);
      n++;
      met += k >= 0.45;
      if (k < worst) {
        worst = k;
        worst_at = mlc_arena_printf(a, "%s %s", rows[i].name, cond_name(a, c, ncpu, cpus));
      }
    }
  printf("goal (ours >= 45%% of quiet speed under one busy neighbour): %d of %d met; lowest %.0f%% "
         "(%s)\n", met, n, 100 * worst, worst_at);
}

typedef MLC_VEC(bench_case) case_list;

static void add_cases(mlc_arena *a, const row *r, int nconds, int ncpu, const int *cpus,
                      int threads, int rounds, case_list *cases) {
  for (int c = 0; c < nconds; c++)
    for (int w = 0; w < 2; w++) {
      const char *who = w == 0 ? "ours" : mlc_arena_printf(a, "openblas_%dt", threads);
      const char *cname = cond_name(a, c, ncpu, cpus);
      const char *what = c == 0 ? "nothing else started"
                         : c <= ncpu ? "one spinning process pinned to that CPU"
                                     : "a neighbour forking children that touch 300 MB each";
      const char *used = w == 1 ? (r->latency ? "the same dense layers through cblas_sgemm"
                                              : "cblas_sgemm")
                         : r->latency
                             ? mlc_arena_printf(a, "%d kernels from records (%s)", r->n_records,
                                                r->source)
                             : mlc_arena_printf(a, "record %lld (%s)", (long long)r->record_id,
                                                r->source);
      bench_case bc = {
          mlc_arena_printf(a, "contention_%s_%s_%s", r->name, who, cname), r->v[c][w],
          r->latency ? "us" : "GFLOP/s", c == 0 ? NULL : mlc_arena_printf(a, "%s_quiet", who),
          r->v[0][w],
          mlc_arena_printf(a, "%s; %d threads; %s; median of %d rounds alternating ours and "
                              "OpenBLAS; ratio: %s",
                           used, threads, what, rounds,
                           r->latency ? "latency over the quiet latency (its inverse is the "
                                        "share of the quiet speed kept)"
                                      : "share of the quiet speed kept")};
      MLC_VEC_PUSH(*cases, bc);
    }
}

/* ---- main -------------------------------------------------------------------- */

static int env_int(const char *name, int dflt) {
  const char *s = getenv(name);
  return s && *s ? atoi(s) : dflt;
}

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  const char *results = "bench/results.json";
  int threads = mlc_target_host_cores(), trials = env_int("MLC_BENCH_TRIALS", 0);
  bool quick = env_int("MLC_BENCH_QUICK", 0) != 0;
  records rs = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) rs.user_path = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fprintf(stderr, "usage: bench_contention [--results FILE] [--threads T] [--trials N] "
                      "[--db PATH] [--quick]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  rs.trials = trials > 0 ? trials : quick ? 32 : 64;
  int rounds = quick ? 3 : 5;
  /* The CPUs this process may use, for the pinned neighbours. */
  cpu_set_t own;
  int cpus[MAX_CONDS], ncpu = 0;
  if (sched_getaffinity(0, sizeof own, &own) != 0) die("affinity", "sched_getaffinity failed");
  for (int c = 0; c < CPU_SETSIZE && ncpu < MAX_CONDS - 2; c++)
    if (CPU_ISSET(c, &own)) cpus[ncpu++] = c;
  int nconds = ncpu + 2;

  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  mlc_target t;
  char tstr[64];
  snprintf(tstr, sizeof tstr, "llvm -num-cores=%d", threads);
  if (!mlc_target_parse(tstr, &t, &err)) die("target", err.msg);
  if (rs.user_path && !(rs.user = mlc_db_open(rs.user_path, MLC_DB_EXISTING, &err)))
    die(rs.user_path, err.msg);
  openblas_set_num_threads(threads);

  /* Tuning (or the records of --db) first, all before any neighbour. */
  double t0 = bench_now_ms();
  static const int SIZES[N_SIZES] = {128, 512, 1024};
  matmul ks[N_SIZES];
  model md;
  row rows[MAX_KERNELS];
  int nk = 0, nr = 0;
  for (int i = 0; i < N_SIZES; i++) {
    if (quick && SIZES[i] != 512) continue;
    matmul *k = &ks[nk++];
    matmul_init(a, k, SIZES[i], &t, &rs);
    double n = SIZES[i];
    rows[nr++] = (row){.name = mlc_arena_printf(a, "matmul_%d", SIZES[i]),
                       .run = {run_ours, run_blas}, .ctx = k, .flops = 2 * n * n * n,
                       .record_id = k->record_id, .n_records = 1, .source = k->source};
  }
  model_init(a, &md, &t, &rs);
  rows[nr++] = (row){.name = "mlp", .latency = true, .run = {run_model_ours, run_model_blas},
                     .ctx = &md, .n_records = md.v.n_tuned, .source = md.source};
  double setup_s = (bench_now_ms() - t0) * 1e-3;
  if (rs.user) mlc_db_close(rs.user);
  if (rs.tmp) mlc_db_close(rs.tmp);
  if (rs.tmp_path[0]) bench_remove_db(rs.tmp_path);

  t0 = bench_now_ms();
  for (int cond = 0; cond < nconds; cond++) {
    pid_t nb = start_neighbour(cond, ncpu, cpus);
    for (int i = 0; i < nr; i++) time_row(&rows[i], cond, rounds);
    stop_neighbour(nb);
  }
  double timing_s = (bench_now_ms() - t0) * 1e-3;

  printf("kernels (%s; tuning and compiling %.0f s, timing %.0f s):\n", t.str, setup_s, timing_s);
  for (int i = 0; i < nr; i++)
    if (rows[i].latency)
      printf("  %-12s %d/%d kernels from records, %s; %.2f us quiet\n", rows[i].name,
             rows[i].n_records, md.v.n, rows[i].source, rows[i].v[0][0]);
    else
      printf("  %-12s record %lld, %s; %.2f GFLOP/s quiet\n", rows[i].name,
             (long long)rows[i].record_id, rows[i].source, rows[i].v[0][0]);
  print_table(a, rows, nr, nconds, ncpu, cpus, threads);

  case_list cases = {0};
  for (int i = 0; i < nr; i++) add_cases(a, &rows[i], nconds, ncpu, cpus, threads, rounds, &cases);
  bool ok = bench_write_results(results, cases.len, cases.data, &err);
  if (!ok) fprintf(stderr, "bench_contention: error: %s\n", err.msg);
  MLC_VEC_FREE(cases);
  for (int i = 0; i < nk; i++) matmul_free(&ks[i]);
  model_free(&md);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
