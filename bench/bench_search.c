/* bench_search: does the cost model earn its trials?
 *
 * Tunes a suite of workloads (bench/search_suite/: 1-D, 2-D and 3-D,
 * grouped, dilated, depthwise, transposed and capsule convolutions,
 * batched matmul, matmul, softmax, layer norm and a norm; the shapes are
 * TVM te_workload's kinds, scaled down so one trial builds in about a
 * second) with three searches, each on a fresh database, several seeds:
 *   xgb-rank  the default: evolutionary search scored by the learned model
 *   random    the same search with random scores (no model)
 *   sampling  no search: every candidate a fresh design-space sample
 * and, asked for (--searches), xgb-overlap: xgb-rank searching each batch
 * while the one before is measured, as mlc-tune does under mpirun (its
 * model one batch behind), to compare with the serial search;
 * and reports, per workload and as a geometric mean, the trials a run
 * needed to reach 95% of the best throughput any run of the workload
 * found ("trials to 95%"; a run that never got there counts as its budget
 * and is marked ">"). The default candidate (the untuned schedule) is left
 * out, so the curves are the searches' own.
 *
 * The runs of one workload share one worker pool and a memo of results by
 * trace: a candidate two runs both propose is built and timed once, so
 * the searches are compared on the same measurements and the suite costs
 * the distinct candidates, not the runs. The overlapped search runs first
 * and measures everything it proposes: it learns from results as they
 * arrive, and remembered ones would arrive all at once. Results merge into
 * bench/results.json (search_<workload>_<search>: trials to 95%, the
 * baseline random's).
 *
 *   bench_search [--trials N] [--seeds S] [--first-seed K] [--only C1D,GMM,...]
 *                [--searches xgb-rank,random,sampling,xgb-overlap] [--no-warm]
 *                [--warm-records R] [--results FILE] [--round-time R]
 *
 * --round-time R times the search alone instead: R rounds of one search
 * per workload (population 512, 4 generations, 64 candidates, random
 * scores), ms a round, and a hash of the candidates it proposed (a change
 * that only makes the search faster keeps it).
 * The warm database holds each other workload's first xgb-rank run (R of
 * its records spread over the run; default all of them, of which the
 * tuner itself learns from 32 a workload, spread the same way).
 *
 * Defaults: 1,000 trials, 3 seeds, every workload and search: 117 runs,
 * hours on a 2-core machine. MLC_BENCH_QUICK=1: 64 trials, 1 seed.
 */
#include "bench/results.h"
#include "db/db.h"
#include "ir/ir.h"
#include "measure/measure.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"
#include "tuner/tuner_internal.h" /* the search alone (--round-time) */

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_search: error: %s: %s\n", what, msg);
  exit(1);
}

/* A workload: a built-in task with its shape, or a TVMScript file of
 * bench/search_suite/. */
typedef struct suite_entry {
  const char *name, *task, *shape, *file;
} suite_entry;

static const suite_entry suite[] = {
    {"C1D", NULL, NULL, "c1d.py"},
    {"C2D", "conv2d_nchw", "1,32,28,28,64,3,3,1,1", NULL},
    {"C3D", NULL, NULL, "c3d.py"},
    {"DEP", "depthwise_conv2d", "1,64,56,56,3,3,1,1", NULL},
    {"DIL", NULL, NULL, "dil.py"},
    {"GRP", NULL, NULL, "grp.py"},
    {"T2D", NULL, NULL, "t2d.py"},
    {"CAP", NULL, NULL, "cap.py"},
    {"GMM", "batch_matmul", "4,128,128,128", NULL},
    {"MM", "matmul", "256,256,256", NULL},
    {"SFM", "softmax", "256,1024", NULL},
    {"LN", "layernorm", "256,768", NULL},
    {"NRM", NULL, NULL, "nrm.py"},
};
enum { N_SUITE = sizeof suite / sizeof suite[0] };

/* A search: its cost model, and whether it evolves candidates at all. */
typedef struct search_kind {
  const char *name, *cost_model;
  bool sampling; /* every candidate drawn fresh from the design space */
  bool overlap;  /* each batch searched while the last is measured, as under MPI */
} search_kind;

static const search_kind searches[] = {
    {"xgb-rank", "xgb-rank", false, false},
    {"random", "random", false, false},
    {"sampling", "random", true, false},
    {"xgb-overlap", "xgb-rank", false, true},
};
enum { N_SEARCHES = sizeof searches / sizeof searches[0] };

static mlc_prim_func *load_workload(mlc_arena *a, const suite_entry *w) {
  mlc_error err;
  if (w->task) {
    const mlc_task_def *d = mlc_task_find(w->task);
    int64_t dims[MLC_TASK_MAX_DIMS];
    if (!d || !mlc_task_parse_shape(d, w->shape, dims, &err)) die(w->name, d ? err.msg : "no such task");
    return mlc_task_build(a, d, dims);
  }
  const char *path = mlc_arena_printf(a, "bench/search_suite/%s", w->file);
  char *text = mlc_read_file(path, NULL, &err);
  if (!text) die(path, err.msg);
  mlc_module *m = mlc_parse_module(a, path, text, &err);
  mlc_free(text);
  if (!m || !mlc_verify_module(m, &err)) die(path, err.msg);
  mlc_prim_func *f = mlc_module_find(m, "main");
  if (!f) die(path, "no prim_func main");
  return f;
}

/* ---- measuring: one pool per workload, results remembered by trace -------------------- */

typedef struct memo_entry {
  uint64_t key;
  mlc_measure_result r;
} memo_entry;

typedef struct memo_pool {
  mlc_measure *pool;        /* started at the first miss of a pass */
  MLC_VEC(memo_entry) seen; /* few thousand at most: a linear scan is enough */
  int built;                /* candidates measured, not remembered */
  /* the run in progress: each trial's seconds (INFINITY: failed), and
   * whether it measures everything afresh (an overlapped search learns
   * from results as they arrive: remembered ones would all arrive at once) */
  MLC_VEC(double) curve;
  bool fresh;
} memo_pool;

static const mlc_measure_result *memo_find(const memo_pool *m, uint64_t key) {
  for (int i = 0; i < m->seen.len; i++)
    if (m->seen.data[i].key == key) return &m->seen.data[i].r;
  return NULL;
}

/* Results are published as they come (a remembered one at once), so an
 * overlapped search learns from them while the batch is measured. */
static bool memo_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  memo_pool *m = ud;
  mlc_measure_cand *todo = mlc_xmalloc(sizeof *todo * (size_t)n);
  int *where = mlc_xmalloc(sizeof *where * (size_t)n);
  int k = 0;
  for (int i = 0; i < n; i++) {
    const mlc_measure_result *r =
        m->fresh ? NULL : memo_find(m, mlc_hash_str(c[i].trace ? c[i].trace : "", 0));
    if (r) {
      mlc_measure_result_publish(&out[i], r, i);
    } else {
      todo[k] = c[i];
      where[k++] = i;
    }
  }
  if (k > 0 && !m->pool) {
    mlc_tuner_tune_opts po;
    mlc_tuner_tune_opts_default(&po);
    mlc_measure_opts mo;
    mlc_tuner_pool_opts(&po, &mo);
    m->pool = mlc_measure_new(&mo, err);
  }
  bool ok = k == 0 || (m->pool && mlc_measure_submit(m->pool, k, todo, err));
  mlc_measure_result r;
  while (ok && k > 0 && mlc_measure_next(m->pool, &r) > 0) {
    int i = where[r.index];
    MLC_VEC_PUSH(m->seen, ((memo_entry){mlc_hash_str(c[i].trace ? c[i].trace : "", 0), r}));
    mlc_measure_result_publish(&out[i], &r, i);
  }
  m->built += ok ? k : 0;
  for (int i = 0; ok && i < n; i++)
    MLC_VEC_PUSH(m->curve, out[i].status == MLC_MEASURE_OK ? out[i].mean_sec : INFINITY);
  mlc_free(todo);
  mlc_free(where);
  return ok;
}

/* ---- one run ----------------------------------------------------------------------- */

typedef struct run {
  double *curve; /* seconds of trial k (INFINITY: failed), n trials */
  int n;
  double wall_s;
} run;

static double run_best(const run *r) {
  double b = INFINITY;
  for (int i = 0; i < r->n; i++) b = fmin(b, r->curve[i]);
  return b;
}

/* Trials until the run's best is within 95% of best_sec's throughput;
 * 0: never (censored at the run's length). */
static int trials_to_95(const run *r, double best_sec) {
  double b = INFINITY;
  for (int i = 0; i < r->n; i++) {
    b = fmin(b, r->curve[i]);
    if (b * 0.95 <= best_sec) return i + 1;
  }
  return 0;
}

/* The median over seeds of trials to 95%, a censored run counting as its
 * budget; *censored: how many were. */
static double median_t95(const run *runs, int seeds, double best, int trials, int *censored) {
  double v[64];
  *censored = 0;
  for (int s = 0; s < seeds; s++) {
    int t = trials_to_95(&runs[s], best);
    *censored += t == 0;
    v[s] = t ? t : trials;
  }
  return bench_median(v, seeds);
}

/* A workload of the suite and everything measured of it. */
typedef struct workload {
  const suite_entry *w;
  const mlc_prim_func *f;
  memo_pool mp;
  run runs[N_SEARCHES][64]; /* cold: a fresh database */
  run warm[64];             /* xgb-rank on a database holding the other workloads' records */
  /* the records of its first xgb-rank run, for the others' warm starts */
  int n_recs;
  mlc_db_record *recs;
  double best, wall;
} workload;

static mlc_db *open_fresh(const char *path) {
  unlink(path);
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  if (!db) die(path, err.msg);
  return db;
}

/* Each other workload's kept records (per_workload of them, spread over
 * its run; 0: all) into db, under its own workload. */
static void add_others(mlc_db *db, const workload *ws, int n, const workload *self,
                       int per_workload) {
  mlc_error err;
  for (int i = 0; i < n; i++) {
    if (&ws[i] == self || ws[i].n_recs == 0) continue;
    int64_t id = mlc_db_add_workload(db, ws[i].w->name, ws[i].w->shape ? ws[i].w->shape : "",
                                     ws[i].f, &err);
    if (id < 0) die("warm database", err.msg);
    int want = per_workload > 0 && per_workload < ws[i].n_recs ? per_workload : ws[i].n_recs;
    for (int k = 0; k < want; k++) {
      mlc_db_record rec = ws[i].recs[(int64_t)k * ws[i].n_recs / want];
      rec.workload_id = id;
      if (!mlc_db_commit(db, 1, &rec, NULL, &err)) die("warm database", err.msg);
    }
  }
}

/* Tune to `trials` in db; keep (a, non-NULL) the run's records. */
static run tune_once(workload *wl, mlc_db *db, const search_kind *sk, int seed, int trials,
                     mlc_arena *keep) {
  const suite_entry *w = wl->w;
  mlc_error err;
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = w->name;
  o.shape = w->shape ? w->shape : "";
  o.trials = trials;
  o.cost_model = sk->cost_model;
  o.search.seed = (uint64_t)seed;
  if (sk->sampling) {
    o.search.eps_greedy = 1;
    o.search.generations = 0;
  }
  o.overlap = sk->overlap;
  o.no_default_candidate = true;
  o.measure_baseline = false;
  o.remeasure_top = 0;
  o.measure = memo_measure;
  o.measure_ud = &wl->mp;
  wl->mp.curve.len = 0;
  wl->mp.fresh = sk->overlap;
  mlc_tuner_tune_result res;
  if (!mlc_tuner_tune(db, wl->f, &o, &res, &err)) die(w->name, err.msg);
  if (keep) {
    wl->n_recs = mlc_db_records(db, res.workload_id, NULL, keep, &wl->recs, &err);
    if (wl->n_recs < 0) die(w->name, err.msg);
  }
  run r = {mlc_xmalloc(sizeof(double) * (size_t)(wl->mp.curve.len + 1)), wl->mp.curve.len,
           res.total_sec};
  memcpy(r.curve, wl->mp.curve.data, sizeof(double) * (size_t)wl->mp.curve.len);
  for (int i = 0; i < r.n; i++) wl->best = fmin(wl->best, r.curve[i]);
  wl->wall += r.wall_s;
  fprintf(stderr, "  %s %s seed %d: %d trials, best %.4g ms, %.0f s", w->name, sk->name, seed,
          r.n, 1e3 * run_best(&r), r.wall_s);
  if (res.errors) fprintf(stderr, " (%d failed; the first: %s)", res.errors, res.first_error);
  if (res.transfer_records)
    fprintf(stderr, " (warm: the model first trained on %d records of %d workloads)",
            res.transfer_records, res.transfer_workloads);
  fprintf(stderr, "\n");
  return r;
}

/* ---- the suite --------------------------------------------------------------------- */

typedef struct opts {
  int trials, seeds, first_seed, warm_records;
  int round_time; /* --round-time R: only time R search rounds per workload */
  bool warm;
  const char *only, *searches, *results;
} opts;

static bool listed(const char *list, const char *name) {
  if (!list) return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static void end_pass(workload *wl) {
  if (wl->mp.pool) mlc_measure_free(wl->mp.pool);
  wl->mp.pool = NULL;
}

/* Pass 1: every search from a fresh database; the first xgb-rank run's
 * records are kept for the others' warm starts. */
static void cold_runs(workload *wl, const opts *op, const char *dir, mlc_arena *a) {
  char path[512];
  /* the overlapped search first: what it measures, the others may reuse */
  for (int j = 0; j < 2 * N_SEARCHES; j++) {
    int k = j % N_SEARCHES;
    if (searches[k].overlap != (j < N_SEARCHES) || !listed(op->searches, searches[k].name)) continue;
    for (int s = 0; s < op->seeds; s++) {
      snprintf(path, sizeof path, "%s/%s_%s_%d.db", dir, wl->w->name, searches[k].name, s + 1);
      mlc_db *db = open_fresh(path);
      bool keep = op->warm && k == 0 && s == 0;
      wl->runs[k][s] = tune_once(wl, db, &searches[k], op->first_seed + s, op->trials,
                                 keep ? a : NULL);
      mlc_db_close(db);
      unlink(path);
    }
  }
  end_pass(wl);
}

/* Pass 2: xgb-rank on a database holding the other workloads' records. */
static void warm_runs(workload *ws, int n, workload *wl, const opts *op, const char *dir) {
  char path[512];
  for (int s = 0; s < op->seeds; s++) {
    snprintf(path, sizeof path, "%s/%s_warm_%d.db", dir, wl->w->name, s + 1);
    mlc_db *db = open_fresh(path);
    add_others(db, ws, n, wl, op->warm_records);
    wl->warm[s] = tune_once(wl, db, &searches[0], op->first_seed + s, op->trials, NULL);
    mlc_db_close(db);
    unlink(path);
  }
  end_pass(wl);
}

typedef MLC_VEC(bench_case) case_list;

static void add_case(case_list *cases, const char *name, double v, double base, const char *notes) {
  bench_case c = {.name = name, .value = v, .unit = "trials", .baseline = base > 0 ? "random" : NULL,
                  .baseline_value = base, .notes = notes};
  MLC_VEC_PUSH(*cases, c);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* Trials to 95% of run s of search k on workload wl (censored: the budget). */
static double t95_of(const workload *wl, int k, int s, int trials) {
  int t = trials_to_95(&wl->runs[k][s], wl->best);
  return t ? t : trials;
}

/* Search k against xgb-rank on the same workloads and seeds: the
 * geometric mean ratio of trials to 95%, and its 95% interval from a
 * bootstrap that resamples workloads (each with all its seeds), so the
 * spread between workloads and seeds is the noise the ratio is read
 * against. */
static void paired_ratio(const workload *ws, int n, int k, int seeds, int trials, double *ratio,
                         double *lo, double *hi) {
  double *d = mlc_xmalloc(sizeof(double) * (size_t)n); /* per workload: mean log ratio */
  double sum = 0;
  for (int i = 0; i < n; i++) {
    double acc = 0;
    for (int s = 0; s < seeds; s++)
      acc += log(t95_of(&ws[i], k, s, trials)) - log(t95_of(&ws[i], 0, s, trials));
    d[i] = acc / seeds;
    sum += d[i];
  }
  *ratio = exp(sum / n);
  enum { RESAMPLES = 4000 };
  double *means = mlc_xmalloc(sizeof(double) * RESAMPLES);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 11);
  for (int b = 0; b < RESAMPLES; b++) {
    double m = 0;
    for (int i = 0; i < n; i++) m += d[mlc_pcg32_bounded(&rng, (uint32_t)n)];
    means[b] = m / n;
  }
  qsort(means, RESAMPLES, sizeof(double), cmp_double);
  *lo = exp(means[(int)(0.025 * RESAMPLES)]);
  *hi = exp(means[(int)(0.975 * RESAMPLES) - 1]);
  mlc_free(means);
  mlc_free(d);
}

/* --round-time: the search alone, as one round of a tuning run does it
 * (a population of 512 evolved over 4 generations into a batch of 64),
 * with random scores so the model's cost is left out; ms per round,
 * averaged over `rounds` rounds of one search. */
static double round_ms(const mlc_prim_func *f, int rounds, uint64_t *batch_xor) {
  mlc_tuner_opts so;
  mlc_tuner_opts_default(&so);
  mlc_error err;
  mlc_tuner_search *s = mlc_tuner_search_new(f, &so, &err);
  if (!s) die("search", err.msg);
  double t0 = bench_now_ms();
  for (int r = 0; r < rounds; r++) {
    mlc_tuner_cand *b;
    int n = mlc_tuner_search_next_batch(s, 64, &b, &err);
    if (n <= 0) die("search", n < 0 ? err.msg : mlc_tuner_search_message(s));
    for (int i = 0; i < n; i++) *batch_xor ^= b[i].hash;
  }
  double ms = (bench_now_ms() - t0) / rounds;
  mlc_tuner_search_free(s);
  return ms;
}

static void time_rounds(const workload *ws, int n, const opts *op, mlc_arena *a) {
  printf("# one search round: population %d, %d generations, 64 candidates, random scores; "
         "ms a round, mean of %d rounds\n", 512, 4, op->round_time);
  case_list cases = {0};
  double log_sum = 0;
  for (int i = 0; i < n; i++) {
    uint64_t x = 0;
    double ms = round_ms(ws[i].f, op->round_time, &x);
    /* the candidates' hashes, to see that a faster search found the same ones */
    printf("  %-4s %8.1f ms   candidates %016llx\n", ws[i].w->name, ms, (unsigned long long)x);
    log_sum += log(ms);
    MLC_VEC_PUSH(cases, ((bench_case){.name = mlc_arena_printf(a, "search_round_ms_%s", ws[i].w->name),
                                      .value = ms, .unit = "ms",
                                      .notes = "one search round: population 512, 4 generations, "
                                               "64 candidates, random scores"}));
  }
  printf("  %-4s %8.1f ms (geometric mean)\n", "geo", exp(log_sum / n));
  mlc_error err;
  if (!bench_write_results(op->results, cases.len, cases.data, &err)) die(op->results, err.msg);
  MLC_VEC_FREE(cases);
}

static void cell(double t95, int censored, int seeds) {
  char buf[32];
  snprintf(buf, sizeof buf, "%s%.0f", censored * 2 > seeds ? ">" : "", t95);
  printf(" %10s", buf);
}

int main(int argc, char **argv) {
  bool quick = getenv("MLC_BENCH_QUICK") && atoi(getenv("MLC_BENCH_QUICK"));
  opts op = {quick ? 64 : 1000, quick ? 1 : 3, 1, 0, 0, true, NULL, "xgb-rank,random,sampling", "bench/results.json"};
  static const struct option longs[] = {
      {"trials", required_argument, 0, 'n'}, {"seeds", required_argument, 0, 's'},
      {"only", required_argument, 0, 'o'},   {"searches", required_argument, 0, 'k'},
      {"results", required_argument, 0, 'r'}, {"no-warm", no_argument, 0, 'w'},
      {"first-seed", required_argument, 0, 'f'}, {"warm-records", required_argument, 0, 'R'},
      {"round-time", required_argument, 0, 't'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
    switch (c) {
    case 'n': op.trials = atoi(optarg); break;
    case 's': op.seeds = atoi(optarg); break;
    case 'o': op.only = optarg; break;
    case 'k': op.searches = optarg; break;
    case 'r': op.results = optarg; break;
    case 'w': op.warm = false; break;
    case 'f': op.first_seed = atoi(optarg); break;
    case 'R': op.warm_records = atoi(optarg); break;
    case 't': op.round_time = atoi(optarg); break;
    default:
      printf("usage: bench_search [--trials N] [--seeds S] [--first-seed K] [--only C1D,GMM,...]\n"
             "                    [--searches xgb-rank,random,sampling,xgb-overlap] [--no-warm]\n"
             "                    [--warm-records R] [--results FILE] [--round-time R]\n");
      return c == 'h' ? 0 : 2;
    }
  }
  if (op.trials < 16 || op.seeds < 1 || op.seeds > 64) die("options", "--trials >= 16, --seeds 1..64");
  op.warm = op.warm && listed(op.searches, "xgb-rank");
  char dir[] = "/tmp/bench_search_XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", "cannot make a scratch directory");
  mlc_arena *a = mlc_arena_new();
  workload *ws = mlc_xmalloc(sizeof *ws * N_SUITE);
  int n = 0;
  for (int i = 0; i < N_SUITE; i++)
    if (listed(op.only, suite[i].name))
      ws[n++] = (workload){.w = &suite[i], .f = load_workload(a, &suite[i]), .best = INFINITY};
  if (n == 0) die("--only", "no workload of the suite matches");
  if (op.round_time > 0) {
    time_rounds(ws, n, &op, a);
    mlc_free(ws);
    rmdir(dir);
    mlc_arena_free(a);
    return 0;
  }
  for (int i = 0; i < n; i++) cold_runs(&ws[i], &op, dir, a);
  for (int i = 0; op.warm && n > 1 && i < n; i++) warm_runs(ws, n, &ws[i], &op, dir);
  bool warm = op.warm && n > 1;

  printf("# trials to reach 95%% of the best throughput any run found, median of %d seeds (%d-%d) "
         "of %d trials (>: most seeds did not)\n", op.seeds, op.first_seed,
         op.first_seed + op.seeds - 1, op.trials);
  if (warm)
    printf("# warm: xgb-rank on a database holding %s records of each other workload's first "
           "xgb-rank run\n", op.warm_records > 0 ? mlc_arena_printf(a, "%d", op.warm_records) : "all");
  printf("# %-4s %10s", "", "best GF/s");
  for (int k = 0; k < N_SEARCHES; k++)
    if (listed(op.searches, searches[k].name)) printf(" %10s", searches[k].name);
  if (warm) printf(" %10s", "warm");
  printf(" %9s %7s\n", "distinct", "wall s");
  case_list cases = {0};
  double log_sum[N_SEARCHES + 1] = {0};
  for (int i = 0; i < n; i++) {
    workload *wl = &ws[i];
    if (!isfinite(wl->best)) die(wl->w->name, "no run measured a working candidate");
    double gf = mlc_func_flops(wl->f) / wl->best * 1e-9;
    printf("  %-4s %10.2f", wl->w->name, gf);
    double t95[N_SEARCHES + 1] = {0};
    for (int k = 0; k <= N_SEARCHES; k++) {
      bool is_warm = k == N_SEARCHES;
      if (is_warm ? !warm : !listed(op.searches, searches[k].name)) continue;
      int cens;
      t95[k] = median_t95(is_warm ? wl->warm : wl->runs[k], op.seeds, wl->best, op.trials, &cens);
      cell(t95[k], cens, op.seeds);
      log_sum[k] += log(t95[k]);
    }
    printf(" %9d %7.0f\n", wl->mp.built, wl->wall);
    const char *notes = mlc_arena_printf(a, "trials to 95%% of the best (%.2f GFLOP/s), median of "
                                            "%d seeds of %d trials", gf, op.seeds, op.trials);
    for (int k = 0; k <= N_SEARCHES; k++)
      if (t95[k] > 0)
        add_case(&cases,
                 mlc_arena_printf(a, "search_%s_%s", wl->w->name,
                                  k == N_SEARCHES ? "xgb-rank-warm" : searches[k].name),
                 t95[k], t95[1], notes);
  }
  printf("  %-4s %10s", "geo", "");
  for (int k = 0; k <= N_SEARCHES; k++) {
    bool is_warm = k == N_SEARCHES;
    if (is_warm ? !warm : !listed(op.searches, searches[k].name)) continue;
    double g = exp(log_sum[k] / n);
    printf(" %10.1f", g);
    add_case(&cases,
             mlc_arena_printf(a, "search_geomean_%s", is_warm ? "xgb-rank-warm" : searches[k].name),
             g, log_sum[1] != 0 ? exp(log_sum[1] / n) : 0,
             mlc_arena_printf(a, "geometric mean over %d workloads of trials to 95%%", n));
  }
  printf("\n");
  for (int k = 1; n > 1 && k < N_SEARCHES && listed(op.searches, searches[0].name); k++) {
    if (!listed(op.searches, searches[k].name)) continue;
    double r, lo, hi;
    paired_ratio(ws, n, k, op.seeds, op.trials, &r, &lo, &hi);
    printf("# %s / xgb-rank, paired by workload and seed: %.2fx the trials to 95%% (95%% interval "
           "%.2f-%.2f, bootstrap over the %d workloads): %s\n", searches[k].name, r, lo, hi, n,
           lo > 1 ? "more trials than xgb-rank" : hi < 1 ? "fewer trials than xgb-rank"
                                                    : "no difference beyond the noise");
    add_case(&cases, mlc_arena_printf(a, "search_paired_%s_vs_xgb-rank", searches[k].name), r, 0,
             mlc_arena_printf(a, "geometric mean ratio of trials to 95%%, paired by workload and "
                                 "seed; 95%% bootstrap interval %.2f-%.2f", lo, hi));
  }
  mlc_error err;
  if (!bench_write_results(op.results, cases.len, cases.data, &err)) die(op.results, err.msg);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < N_SEARCHES; k++)
      for (int s = 0; s < op.seeds; s++) mlc_free(ws[i].runs[k][s].curve);
    for (int s = 0; s < op.seeds; s++) mlc_free(ws[i].warm[s].curve);
    MLC_VEC_FREE(ws[i].mp.seen);
    MLC_VEC_FREE(ws[i].mp.curve);
  }
  mlc_free(ws);
  rmdir(dir);
  mlc_arena_free(a);
  return 0;
}
