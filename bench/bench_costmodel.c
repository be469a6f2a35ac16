/* bench_costmodel: how well and how fast the cost model ranks candidates.
 *
 * The dataset is a tuning database (db/db.h): random schedules
 * (mlc_costmodel_random_schedule) of five workloads (matmul of three
 * shapes, conv2d, dense_bias_relu), each built and timed in-process (LLVM
 * JIT, best of 3 repeats) and committed as an ordinary record (trace,
 * run_secs or error) for this host's target. The bench reads the records
 * back, replays their traces and extracts features, then for every model
 * kind trains on half of each workload's records and reports on the other
 * half: pairwise ranking accuracy, Spearman correlation, and recall of
 * the true top-32 within the predicted top-64, next to random scoring; the
 * same on a workload left out of training; a replayed search over each
 * measured pool; how well a second timing ranks the first (the noise
 * ceiling); mlc-tune on matmul 256^3 with xgb-rank vs random scoring (5
 * seeds) and the model's accuracy on the tuner's own candidates. Also
 * times feature extraction + scoring of 2,048 candidates and a retraining
 * on 5,000 records. Results are merged into bench/results.json (DESIGN.md
 * section 6; cases of other benchmarks are kept), each note ending with
 * the load average when its case was taken.
 *
 *   bench_costmodel [--dataset DB] [--per-task N] [--collect-only | --no-collect]
 *                   [--quick] [--out FILE] [--no-tuner] [--tuner-1024]
 *
 * DB defaults to $MLC_COSTMODEL_DATASET, else build/bench/costmodel_dataset.db.
 * Records it lacks are measured first (2,000 take about 5 minutes on a
 * quiet 2-core machine, 25 under load: LLVM -O3 builds dominate); each
 * batch of 16 is committed, so an interrupted run resumes, and `make
 * bench` after the first run re-measures nothing. --collect-only is the
 * dataset command; `mlc-db export --db DB` dumps it as JSON lines. The
 * speed cases, the re-measurement and the mlc-tune runs (about 3 minutes)
 * are taken anew every run.
 */
#include "bench/results.h"
#include "costmodel/costmodel_internal.h" /* features, training, datasets */
#include "db/db.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tuner/tuner_internal.h" /* the search and design spaces */

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const struct {
  const char *task, *shape;
} workloads[] = {
    {"matmul", "128,128,128"},
    {"matmul", "64,256,128"},
    {"matmul", "256,32,64"},
    {"conv2d_nchw", "1,16,28,28,32,3,3,1,1"},
    {"dense_bias_relu", "64,256,128"},
};
enum { N_WORK = (int)(sizeof workloads / sizeof workloads[0]) };

typedef struct sample {
  int work;
  double secs; /* INFINITY: failed */
  mlc_features f;
  char *trace; /* the record's trace JSON (heap); NULL for tuner candidates */
} sample;

/* ---- measuring ------------------------------------------------------------ */

enum { REPEATS = 3 };

/* Seconds per call for REPEATS repeats (after a warm-up) of enough calls
 * to last 2 ms each; false when the kernel fails. No cache flush: these
 * shapes fit in the last-level cache. */
static bool time_kernel(mlc_kernel_fn fn, int np, const mlc_array *args, double *secs) {
  if (mlc_kernel_call(fn, np, args) != 0) return false;
  double t0 = now();
  mlc_kernel_call(fn, np, args);
  double one = now() - t0;
  int number = one > 0 ? (int)(2e-3 / one) : 1000;
  number = number < 1 ? 1 : number > 10000 ? 10000 : number;
  for (int r = 0; r < REPEATS; r++) {
    t0 = now();
    for (int i = 0; i < number; i++) mlc_kernel_call(fn, np, args);
    secs[r] = (now() - t0) / number;
  }
  return true;
}

static double min_of(int n, const double *v) {
  double b = INFINITY;
  for (int i = 0; i < n; i++) b = v[i] < b ? v[i] : b;
  return b;
}

/* Load a built object and time it; false (err set) when it fails. */
static bool run_object(const mlc_object *obj, const mlc_prim_func *f, const mlc_array *args,
                       double *secs, mlc_error *err) {
  bool ok = false;
  mlc_jit_lib *lib = mlc_jit_load(obj, err);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, err) : NULL;
  if (fn) ok = time_kernel(fn, f->n_params, args, secs) || mlc_error_set(err, "kernel failed");
  mlc_jit_unload(lib);
  return ok;
}

static mlc_prim_func *build_task(mlc_arena *a, int w) {
  const mlc_task_def *d = mlc_task_find(workloads[w].task);
  int64_t dims[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (!d || !mlc_task_parse_shape(d, workloads[w].shape, dims, &err)) return NULL;
  return mlc_task_build(a, d, dims);
}

/* Seeded random arguments for f (free_args). */
static mlc_array *new_args(const mlc_prim_func *f) {
  mlc_array *args = mlc_xmalloc(sizeof(mlc_array) * (size_t)(f->n_params ? f->n_params : 1));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 1, 2);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x, &rng);
    args[i] = *x;
    mlc_free(x);
  }
  return args;
}

static void free_args(const mlc_prim_func *f, mlc_array *args) {
  for (int i = 0; i < f->n_params; i++) mlc_free(args[i].data);
  mlc_free(args);
}

/* A fresh state of f with a trace replayed (stored decisions); NULL when
 * the trace does not parse or replay. */
static mlc_sched *replay_json(mlc_arena *a, const mlc_prim_func *f, const char *json,
                              mlc_error *err) {
  mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), err);
  if (!t) return NULL;
  mlc_sched *s = mlc_sched_new(f, 1);
  if (mlc_sched_replay(s, t, NULL, NULL, err)) return s;
  mlc_sched_free(s);
  return NULL;
}

/* ---- the dataset database ----------------------------------------------------- */

/* The measured dataset is an ordinary tuning database (db/db.h): one
 * workload per entry of `workloads`, one record per random schedule (its
 * trace, REPEATS timings or an error) for this host's target. Later runs
 * read it back, replay every trace and extract its features, so the
 * dataset can be inspected, exported and extended with mlc-db, and a run
 * interrupted while measuring resumes where it stopped. */

typedef struct collector {
  mlc_db *db;
  const mlc_target *host;
  const char *target; /* normalized host target */
  int w;              /* workload index */
  const mlc_prim_func *f;
  int64_t wid;
  mlc_array *args;
  int replay_mismatch; /* traces whose replay gave another function */
} collector;

enum { COLLECT_BATCH = 16 };

/* One batch of schedules with seeds seed0.. (those already in the database
 * are skipped): built on every core (LLVM is the slow part), then timed
 * one at a time so timings do not disturb each other, then committed in
 * one transaction. Returns the records added or -1. */
static int collect_batch(collector *c, uint64_t seed0, mlc_error *err) {
  mlc_sched *s[COLLECT_BATCH];
  mlc_str js[COLLECT_BATCH];
  mlc_object obj[COLLECT_BATCH];
  bool built[COLLECT_BATCH];
  mlc_error berr[COLLECT_BATCH];
  int nb = 0;
  mlc_arena *a = mlc_arena_new();
  for (int b = 0; b < COLLECT_BATCH; b++) {
    uint64_t seed = seed0 + (uint64_t)b;
    mlc_sched *st = mlc_sched_new(c->f, seed);
    mlc_pcg32 r;
    mlc_pcg32_seed(&r, seed, 17);
    mlc_costmodel_random_schedule(st, &r, NULL);
    mlc_str j = {0};
    mlc_trace_to_json(&j, mlc_sched_trace(st));
    char hash[17];
    int have = mlc_db_trace_hash(j.data, hash, NULL, err)
                   ? mlc_db_has_trace(c->db, c->wid, c->target, hash, err)
                   : -1;
    mlc_sched *again = have == 0 ? replay_json(a, c->f, j.data, err) : NULL;
    if (have == 0 && (!again || mlc_func_struct_hash(mlc_sched_func(again)) !=
                                    mlc_func_struct_hash(mlc_sched_func(st))))
      c->replay_mismatch++; /* measured anyway: the record is what was timed */
    mlc_sched_free(again);
    if (have != 0) {
      mlc_str_free(&j);
      mlc_sched_free(st);
      if (have < 0) {
        mlc_arena_free(a);
        for (int k = 0; k < nb; k++) mlc_sched_free(s[k]), mlc_str_free(&js[k]);
        return -1;
      }
      continue;
    }
    s[nb] = st;
    js[nb++] = j;
  }
  mlc_arena_free(a);
#pragma omp parallel for schedule(dynamic, 1)
  for (int b = 0; b < nb; b++) {
    const mlc_prim_func *g = mlc_sched_func(s[b]);
    built[b] = mlc_target_build(c->host, 1, &g, NULL, NULL, &obj[b], &berr[b]);
  }
  mlc_db_record recs[COLLECT_BATCH];
  double secs[COLLECT_BATCH][REPEATS];
  char msg[COLLECT_BATCH][300];
  for (int b = 0; b < nb; b++) {
    recs[b] = (mlc_db_record){.workload_id = c->wid, .target = c->target, .trace = js[b].data,
                              .round = (int64_t)(seed0 / COLLECT_BATCH)};
    mlc_error rerr;
    if (!built[b]) {
      snprintf(msg[b], sizeof msg[b], "build_error: %.280s", berr[b].msg);
      recs[b].error = msg[b];
    } else if (!run_object(&obj[b], mlc_sched_func(s[b]), c->args, secs[b], &rerr)) {
      snprintf(msg[b], sizeof msg[b], "run_error: %.280s", rerr.msg);
      recs[b].error = msg[b];
    } else {
      recs[b].n_secs = REPEATS;
      recs[b].secs = secs[b];
    }
    if (built[b]) mlc_object_free(&obj[b]);
  }
  int added = 0;
  bool ok = nb == 0 || mlc_db_commit(c->db, nb, recs, &added, err);
  for (int b = 0; b < nb; b++) mlc_sched_free(s[b]), mlc_str_free(&js[b]);
  return ok ? added : -1;
}

/* Records of (workload, host target) in the database, or -1. */
static int count_records(mlc_db *db, int64_t wid, const char *target, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *recs;
  int n = mlc_db_records(db, wid, target, a, &recs, err);
  mlc_arena_free(a);
  return n;
}

/* Tops every workload up to per_task records. Seeds run from 1 upwards
 * (workload w: w * 100000 + i), so a rerun proposes the same schedules
 * and skips the measured ones. */
static bool collect(mlc_db *db, const char *path, int per_task, mlc_error *err) {
  mlc_target host;
  mlc_target_host(&host);
  char target[512];
  mlc_db_normalize_target("llvm", target, sizeof target);
  mlc_arena *a = mlc_arena_new();
  double t_start = now();
  int total = 0;
  bool ok = true;
  for (int w = 0; w < N_WORK && ok; w++) {
    collector c = {.db = db, .host = &host, .target = target, .w = w, .f = build_task(a, w)};
    ok = c.f && (c.wid = mlc_db_add_workload(db, workloads[w].task, workloads[w].shape, c.f,
                                             err)) >= 0;
    int have = ok ? count_records(db, c.wid, target, err) : -1;
    ok = ok && have >= 0;
    if (!ok || have >= per_task) continue;
    if (total == 0)
      fprintf(stderr,
              "bench_costmodel: dataset %s lacks records: measuring up to %d per workload "
              "(all %d: about 5 min on a quiet 2-core machine, 25 under load; resumable)\n",
              path, per_task, per_task * N_WORK);
    c.args = new_args(c.f);
    /* a workload whose random schedules repeat a lot stops after 4x the
     * seeds it needs */
    for (uint64_t i = 0; ok && have < per_task && i < 4 * (uint64_t)per_task; i += COLLECT_BATCH) {
      int added = collect_batch(&c, (uint64_t)w * 100000 + i + 1, err);
      ok = added >= 0;
      have += added > 0 ? added : 0;
      total += added > 0 ? added : 0;
      if (ok && added > 0 && (i / COLLECT_BATCH) % 8 == 7)
        fprintf(stderr, "bench_costmodel: %s %s: %d records (%.0f s)\n", workloads[w].task,
                workloads[w].shape, have, now() - t_start);
    }
    if (c.replay_mismatch)
      fprintf(stderr, "bench_costmodel: warning: %s %s: %d traces replay to another function\n",
              workloads[w].task, workloads[w].shape, c.replay_mismatch);
    free_args(c.f, c.args);
  }
  if (total)
    fprintf(stderr, "bench_costmodel: %d records measured in %.0f s\n", total, now() - t_start);
  mlc_arena_free(a);
  return ok;
}

/* Samples from the database: the first per_task records of each workload
 * for this host (by id), traces replayed, features extracted in parallel;
 * secs is the best repeat (INFINITY for errors). Returns the count or -1. */
static int load_samples(mlc_db *db, int per_task, sample *out, mlc_error *err) {
  char target[512];
  mlc_db_normalize_target("llvm", target, sizeof target);
  mlc_arena *a = mlc_arena_new();
  int n = 0;
  bool ok = true;
  for (int w = 0; w < N_WORK && ok; w++) {
    const mlc_prim_func *f = build_task(a, w);
    int64_t wid;
    int found = f ? mlc_db_find_workload(db, f, &wid, err) : -1;
    ok = found >= 0;
    if (found <= 0) continue;
    mlc_db_record *recs;
    int k = mlc_db_records(db, wid, target, a, &recs, err);
    ok = k >= 0;
    if (!ok) continue;
    if (k > per_task) k = per_task;
    mlc_sched **s = mlc_xmalloc(sizeof(mlc_sched *) * (size_t)(k + 1));
    const mlc_prim_func **fs = mlc_xmalloc(sizeof(*fs) * (size_t)(k + 1));
    int m = 0;
    for (int i = 0; i < k; i++) {
      mlc_error e;
      mlc_sched *st = replay_json(a, f, recs[i].trace, &e);
      if (!st) continue; /* a trace this build cannot replay */
      s[m] = st;
      fs[m] = mlc_sched_func(st);
      sample *sm = &out[n + m++];
      sm->work = w;
      sm->secs = recs[i].error ? INFINITY : min_of(recs[i].n_secs, recs[i].secs);
      sm->trace = mlc_xmalloc(strlen(recs[i].trace) + 1);
      strcpy(sm->trace, recs[i].trace);
    }
    mlc_features *fe = mlc_xmalloc(sizeof(mlc_features) * (size_t)(m + 1));
    if (m && !mlc_features_extract_batch(m, fs, fe, err))
      for (int i = 0; i < m; i++) fe[i].ok = false;
    for (int i = 0; i < m; i++) {
      out[n + i].f = fe[i];
      mlc_sched_free(s[i]);
    }
    n += m;
    mlc_free(fe);
    mlc_free(s);
    mlc_free(fs);
  }
  mlc_arena_free(a);
  return ok ? n : -1;
}

/* ---- quality metrics -------------------------------------------------------------- */

typedef struct metrics {
  double pairwise, spearman, recall;
} metrics;

static int cmp_desc(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a < b) - (a > b);
}

/* Ranks (0 = largest), ties averaged. */
static void ranks(int n, const double *v, double *r) {
  for (int i = 0; i < n; i++) {
    double above = 0, same = 0;
    for (int j = 0; j < n; j++) {
      above += v[j] > v[i];
      same += v[j] == v[i];
    }
    r[i] = above + (same - 1) / 2;
  }
}

static double spearman(int n, const double *x, const double *y) {
  double *rx = mlc_xmalloc(sizeof(double) * (size_t)n), *ry = mlc_xmalloc(sizeof(double) * (size_t)n);
  ranks(n, x, rx);
  ranks(n, y, ry);
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) mx += rx[i] / n, my += ry[i] / n;
  for (int i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  mlc_free(rx);
  mlc_free(ry);
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

/* Of the k fastest, how many are among the model's top m. */
static double recall_at(int n, const double *thr, const double *score, int k, int m) {
  if (n < m) return NAN;
  double *t = mlc_xmalloc(sizeof(double) * (size_t)n), *s = mlc_xmalloc(sizeof(double) * (size_t)n);
  memcpy(t, thr, sizeof(double) * (size_t)n);
  memcpy(s, score, sizeof(double) * (size_t)n);
  qsort(t, (size_t)n, sizeof(double), cmp_desc);
  qsort(s, (size_t)n, sizeof(double), cmp_desc);
  double tk = t[k - 1], sm = s[m - 1];
  int hit = 0, top = 0;
  for (int i = 0; i < n && top < k; i++)
    if (thr[i] >= tk) {
      top++;
      hit += score[i] >= sm;
    }
  mlc_free(t);
  mlc_free(s);
  return (double)hit / k;
}

/* Throughput 1/secs (0 for failures) against scores, per workload of the
 * test part, averaged over workloads. */
static metrics evaluate(int n, const sample *s, const bool *test, const double *scores) {
  metrics m = {0, 0, 0};
  int nw = 0, nr = 0;
  long right = 0, all = 0;
  double *thr = mlc_xmalloc(sizeof(double) * (size_t)n), *sc = mlc_xmalloc(sizeof(double) * (size_t)n);
  for (int w = 0; w < N_WORK; w++) {
    int k = 0;
    for (int i = 0; i < n; i++)
      if (test[i] && s[i].work == w && s[i].f.ok) {
        thr[k] = isfinite(s[i].secs) ? 1 / s[i].secs : 0;
        sc[k++] = scores[i];
      }
    if (k < 2) continue;
    for (int i = 0; i < k; i++)
      for (int j = i + 1; j < k; j++)
        if (thr[i] != thr[j]) {
          all++;
          right += (thr[i] > thr[j]) == (sc[i] > sc[j]);
        }
    m.spearman += spearman(k, thr, sc);
    nw++;
    double r = recall_at(k, thr, sc, 32, 64);
    if (!isnan(r)) m.recall += r, nr++;
  }
  m.pairwise = all ? (double)right / (double)all : 0;
  m.spearman = nw ? m.spearman / nw : 0;
  m.recall = nr ? m.recall / nr : 0;
  mlc_free(thr);
  mlc_free(sc);
  return m;
}

/* Train a model of `kind` on the train part, score the test part. */
static bool run_kind(mlc_costmodel_kind kind, int n, const sample *s, const bool *test,
                     uint64_t seed, metrics *out, double *train_ms) {
  mlc_costmodel *m = mlc_costmodel_new(kind, seed);
  mlc_features *f = mlc_xmalloc(sizeof(mlc_features) * (size_t)n);
  uint64_t *g = mlc_xmalloc(sizeof(uint64_t) * (size_t)n);
  double *secs = mlc_xmalloc(sizeof(double) * (size_t)n), *scores = mlc_xmalloc(sizeof(double) * (size_t)n);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!test[i]) {
      f[k] = s[i].f;
      g[k] = (uint64_t)s[i].work + 1;
      secs[k++] = s[i].secs;
    }
  mlc_error err;
  double t0 = now();
  bool ok = mlc_costmodel_update(m, k, f, g, secs, &err) && mlc_costmodel_train(m, &err);
  if (train_ms) *train_ms = 1e3 * (now() - t0);
  for (int i = 0; i < n; i++) f[i] = s[i].f;
  ok = ok && mlc_costmodel_predict(m, n, f, scores, &err);
  if (!ok) fprintf(stderr, "bench_costmodel: %s: %s\n", mlc_costmodel_kind_name(kind), err.msg);
  else *out = evaluate(n, s, test, scores);
  mlc_costmodel_free(m);
  mlc_free(f);
  mlc_free(g);
  mlc_free(secs);
  mlc_free(scores);
  return ok;
}

/* ---- offline search efficiency ---------------------------------------------------- */

/* A tuner's loop replayed on one workload's measured pool: each round the
 * model scores the unmeasured candidates, the best 16 are "measured" (their
 * recorded time), the model is updated. Returns the trials until a
 * candidate within 90% of the pool's best throughput was measured. */
static int search_trials(mlc_costmodel_kind kind, int n, const sample *s, int w, uint64_t seed) {
  enum { BATCH = 16 };
  int *idx = mlc_xmalloc(sizeof(int) * (size_t)n);
  int k = 0;
  double best = INFINITY;
  for (int i = 0; i < n; i++)
    if (s[i].work == w && s[i].f.ok) {
      idx[k++] = i;
      best = s[i].secs < best ? s[i].secs : best;
    }
  mlc_costmodel_opts o = {.retrain_every = BATCH};
  mlc_costmodel *m = mlc_costmodel_new_opts(kind, seed, &o);
  bool *done = mlc_xmalloc(sizeof(bool) * (size_t)k);
  mlc_features *f = mlc_xmalloc(sizeof(mlc_features) * (size_t)k);
  double *sc = mlc_xmalloc(sizeof(double) * (size_t)k);
  for (int j = 0; j < k; j++) done[j] = false, f[j] = s[idx[j]].f;
  int trials = 0;
  bool hit = false;
  mlc_error err;
  while (trials < k && !hit) {
    if (!mlc_costmodel_predict(m, k, f, sc, &err)) break;
    mlc_features pick_f[BATCH];
    uint64_t g[BATCH];
    double secs[BATCH];
    int np = 0;
    for (; np < BATCH && trials < k; np++, trials++) {
      int bj = -1;
      for (int j = 0; j < k; j++)
        if (!done[j] && (bj < 0 || sc[j] > sc[bj])) bj = j;
      done[bj] = true;
      pick_f[np] = f[bj];
      g[np] = 1;
      secs[np] = s[idx[bj]].secs;
      if (best / secs[np] >= 0.9 && !hit) {
        hit = true;
        trials++;
        np++;
        break;
      }
    }
    if (!hit && !mlc_costmodel_update(m, np, pick_f, g, secs, &err)) break;
  }
  mlc_costmodel_free(m);
  mlc_free(idx);
  mlc_free(done);
  mlc_free(f);
  mlc_free(sc);
  return trials;
}

static int cmp_int(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}

/* Median over seeds of the trials to 90% of the best, per workload. */
static void search_efficiency(int n, const sample *s, double *model_mean, double *random_mean,
                              char *detail, size_t dn) {
  enum { SEEDS = 5 };
  *model_mean = *random_mean = 0;
  size_t off = 0;
  for (int w = 0; w < N_WORK; w++) {
    int tm[SEEDS], tr[SEEDS];
    for (int sd = 0; sd < SEEDS; sd++) {
      tm[sd] = search_trials(MLC_COSTMODEL_XGB_AGG_RANK, n, s, w, 10 + (uint64_t)sd);
      tr[sd] = search_trials(MLC_COSTMODEL_RANDOM, n, s, w, 10 + (uint64_t)sd);
    }
    qsort(tm, SEEDS, sizeof(int), cmp_int);
    qsort(tr, SEEDS, sizeof(int), cmp_int);
    printf("search %s %s: trials to 90%% of best: model %d, random %d (median of %d seeds)\n",
           workloads[w].task, workloads[w].shape, tm[SEEDS / 2], tr[SEEDS / 2], SEEDS);
    *model_mean += (double)tm[SEEDS / 2] / N_WORK;
    *random_mean += (double)tr[SEEDS / 2] / N_WORK;
    if (off < dn)
      off += (size_t)snprintf(detail + off, dn - off, "%s%s %s: %d vs %d", w ? "; " : "",
                              workloads[w].task, workloads[w].shape, tm[SEEDS / 2], tr[SEEDS / 2]);
  }
}

/* ---- measurement repeatability -------------------------------------------------------- */

/* Builds and times the first k candidates of workload w again (their
 * traces replayed) and compares with the recorded times: how well a second
 * measurement ranks the first, the ceiling for any model on this machine. */
static bool repeatability(int n, const sample *s, int w, int k, metrics *out) {
  mlc_target host;
  mlc_target_host(&host);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, w);
  int base = -1;
  for (int i = 0; i < n && base < 0; i++)
    if (s[i].work == w) base = i;
  if (!f || base < 0 || base + k > n) {
    mlc_arena_free(a);
    return false;
  }
  mlc_array *args = new_args(f);
  double *again = mlc_xmalloc(sizeof(double) * (size_t)n);
  bool *test = mlc_xmalloc(sizeof(bool) * (size_t)n);
  for (int i = 0; i < n; i++) again[i] = 0, test[i] = i >= base && i < base + k;
  for (int i = base; i < base + k; i++) {
    mlc_error err;
    mlc_sched *sc = s[i].trace ? replay_json(a, f, s[i].trace, &err) : NULL;
    const mlc_prim_func *g = sc ? mlc_sched_func(sc) : NULL;
    mlc_object obj;
    double secs[REPEATS];
    if (g && mlc_target_build(&host, 1, &g, NULL, NULL, &obj, NULL)) {
      if (run_object(&obj, g, args, secs, &err)) again[i] = 1 / min_of(REPEATS, secs);
      mlc_object_free(&obj);
    }
    mlc_sched_free(sc);
  }
  *out = evaluate(n, s, test, again);
  free_args(f, args);
  mlc_free(again);
  mlc_free(test);
  mlc_arena_free(a);
  return true;
}

/* ---- speed ----------------------------------------------------------------------- */

/* ms to extract features of and score 2,048 fresh candidates of matmul. */
static double predict_speed(mlc_costmodel *m) {
  enum { N = 2048 };
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = build_task(a, 0);
  mlc_sched **s = mlc_xmalloc(sizeof(mlc_sched *) * N);
  for (int i = 0; i < N; i++) {
    s[i] = mlc_sched_new(f, 777 + (uint64_t)i);
    mlc_pcg32 r;
    mlc_pcg32_seed(&r, 777 + (uint64_t)i, 5);
    mlc_costmodel_random_schedule(s[i], &r, NULL);
  }
  double *scores = mlc_xmalloc(sizeof(double) * N);
  mlc_error err;
  double t0 = now();
  bool ok = mlc_costmodel_predict_scheds(m, N, s, scores, &err);
  double ms = 1e3 * (now() - t0);
  if (!ok) fprintf(stderr, "bench_costmodel: predict: %s\n", err.msg);
  for (int i = 0; i < N; i++) mlc_sched_free(s[i]);
  mlc_free(s);
  mlc_free(scores);
  mlc_arena_free(a);
  return ok ? ms : NAN;
}

/* ms to retrain on 5,000 records (the measured ones, repeated); nthread 0:
 * the model's default. */
static double retrain_speed(mlc_costmodel_kind kind, int n, const sample *s, int nthread,
                            mlc_costmodel **keep) {
  enum { N = 5000 };
  mlc_costmodel_opts o = {.nthread = nthread};
  mlc_costmodel *m = mlc_costmodel_new_opts(kind, 1, &o);
  mlc_features *f = mlc_xmalloc(sizeof(mlc_features) * N);
  uint64_t *g = mlc_xmalloc(sizeof(uint64_t) * N);
  double *secs = mlc_xmalloc(sizeof(double) * N);
  for (int i = 0; i < N; i++) {
    f[i] = s[i % n].f;
    g[i] = (uint64_t)s[i % n].work + 1;
    secs[i] = s[i % n].secs * (1 + 1e-3 * (i / n)); /* repeats differ a little */
  }
  mlc_error err;
  bool ok = mlc_costmodel_update(m, N, f, g, secs, &err);
  double t0 = now();
  ok = ok && mlc_costmodel_train(m, &err);
  double ms = 1e3 * (now() - t0);
  if (!ok) fprintf(stderr, "bench_costmodel: retrain: %s\n", err.msg);
  mlc_free(f);
  mlc_free(g);
  mlc_free(secs);
  *keep = m;
  return ok ? ms : NAN;
}

/* ---- report -------------------------------------------------------------------------- */

/* Cases with their own storage for names and notes (bench_case points). */
typedef struct bcase {
  char name[96];
  char notes[1000];
  char load[48]; /* load average when the case was added */
  bench_case c;
} bcase;

/* "1.23 1.10 0.95" (1, 5, 15 minutes); the machine is shared. */
static const char *load_now(void) {
  static char buf[48];
  double l[3];
  if (getloadavg(l, 3) != 3) return "unknown";
  snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

/* Where the dataset came from and the load when it was read (notes). */
static char g_dataset_note[320];

static bcase *add_case(bcase *cs, int *nc, const char *name, double value, const char *unit,
                       const char *baseline, double baseline_value) {
  bcase *b = &cs[(*nc)++];
  snprintf(b->name, sizeof b->name, "%s", name);
  snprintf(b->load, sizeof b->load, "%s", load_now());
  b->notes[0] = 0;
  b->c = (bench_case){b->name, value, unit, baseline, baseline_value, b->notes};
  return b;
}

/* ---- search efficiency with the tuner ---------------------------------------------------- */

/* Features of a record's candidate (its trace replayed on f). */
static void record_features(mlc_arena *a, const mlc_prim_func *f, const mlc_tuner_opts *o,
                            const mlc_db_record *r, mlc_features *out) {
  mlc_error err;
  memset(out, 0, sizeof *out);
  mlc_trace *t = mlc_trace_from_json(a, r->trace, strlen(r->trace), &err);
  mlc_sched *s = t ? mlc_tuner_apply_trace(f, t, o, &err) : NULL;
  if (s && !mlc_features_extract(mlc_sched_func(s), out, &err)) out->ok = false;
  mlc_sched_free(s);
}

/* One tuning run (the real tuner: design space, evolutionary search, worker
 * processes) into a fresh database; fills secs[i] with the mean time of
 * the i-th measured candidate (INFINITY for failures). Returns the count
 * or -1. */
static int tune_once(const char *task, const char *shape, int trials, uint64_t seed,
                     const char *model, double *secs, mlc_features *feats) {
  char path[] = "/tmp/mlc_bench_costmodel_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  unlink(path);
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find(task);
  int64_t dims[MLC_TASK_MAX_DIMS];
  int n = -1;
  if (db && d && mlc_task_parse_shape(d, shape, dims, &err)) {
    mlc_prim_func *f = mlc_task_build(a, d, dims);
    mlc_tuner_tune_opts o;
    mlc_tuner_tune_opts_default(&o);
    o.task = task;
    o.shape = shape;
    o.flops = mlc_task_flops(d, dims);
    o.trials = trials;
    o.cost_model = model;
    o.remeasure_top = 0;
    o.measure_baseline = false;
    o.search.seed = seed;
    mlc_tuner_tune_result res;
    mlc_db_record *recs = NULL;
    if (mlc_tuner_tune(db, f, &o, &res, &err)) {
      n = mlc_db_records(db, res.workload_id, NULL, a, &recs, &err);
      for (int i = 0; i < n; i++) secs[i] = recs[i].error ? INFINITY : recs[i].mean_sec;
      for (int i = 0; i < n && feats; i++) record_features(a, f, &o.search, &recs[i], &feats[i]);
    }
  }
  if (n < 0) fprintf(stderr, "bench_costmodel: tune %s %s: %s\n", task, shape, err.msg);
  mlc_db_close(db);
  mlc_arena_free(a);
  char side[sizeof path + 8];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  return n;
}

/* Trials until a time within 1/0.9 of `best` was measured (n + 1: never). */
static int trials_to(const double *secs, int n, double best) {
  for (int i = 0; i < n; i++)
    if (secs[i] <= best / 0.9) return i + 1;
  return n + 1;
}

enum { TUNER_SEEDS = 5 };

/* Tuning runs of one workload: [0] with xgb-rank, [1] with random scores,
 * seeds 1..TUNER_SEEDS; features kept for the random runs. */
typedef struct tuner_runs {
  const char *task, *shape;
  char base[80]; /* "matmul_256x256x256", for case names */
  int trials;
  double flops, best; /* best: the best time of all runs */
  int n[2][TUNER_SEEDS];
  double *secs[2][TUNER_SEEDS];
  mlc_features *feats[TUNER_SEEDS];
} tuner_runs;

/* How well xgb-rank ranks the tuner's own candidates: trained on the
 * random-scored runs of the first seeds, tested on the last two. */
static void report_tuner_candidates(const tuner_runs *t, bcase *cs, int *nc) {
  int total = 0, n_test = 0, k = 0;
  for (int sd = 0; sd < TUNER_SEEDS; sd++) total += t->n[1][sd];
  sample *s = mlc_xmalloc(sizeof(sample) * (size_t)(total + 1));
  bool *test = mlc_xmalloc(sizeof(bool) * (size_t)(total + 1));
  for (int sd = 0; sd < TUNER_SEEDS; sd++)
    for (int i = 0; i < t->n[1][sd]; i++) {
      s[k] = (sample){0, t->secs[1][sd][i], t->feats[sd][i], NULL};
      n_test += test[k++] = sd >= TUNER_SEEDS - 2;
    }
  metrics m, r;
  if (run_kind(MLC_COSTMODEL_XGB_AGG_RANK, k, s, test, 1, &m, NULL) &&
      run_kind(MLC_COSTMODEL_RANDOM, k, s, test, 1, &r, NULL)) {
    printf("tuner candidates of %s: xgb-rank trained on %d, pairwise %.3f on %d held out "
           "(random %.3f)\n",
           t->base, k - n_test, m.pairwise, n_test, r.pairwise);
    char name[160];
    snprintf(name, sizeof name, "costmodel_xgb-rank_tuner_pairwise_acc_%s", t->base);
    bcase *bc = add_case(cs, nc, name, m.pairwise, "fraction", "random_scores", r.pairwise);
    snprintf(bc->notes, sizeof bc->notes,
             "candidates of mlc-tune's design space (random-scored runs): trained on %d of "
             "seeds 1-%d, tested on the %d of the last two seeds",
             k - n_test, TUNER_SEEDS - 2, n_test);
  }
  mlc_free(s);
  mlc_free(test);
}

/* Best GFLOP/s among the first k measured. */
static double best_after(const double *secs, int n, int k, double flops) {
  double b = INFINITY;
  for (int i = 0; i < n && i < k; i++) b = secs[i] < b ? secs[i] : b;
  return isfinite(b) ? flops / b * 1e-9 : 0;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_desc);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Medians over seeds: trials to 90% of the best of all runs, best GFLOP/s
 * after half and all of the trials. */
/* The median of every run's final best, in seconds: a "typical good
 * kernel", robust to one lucky timing setting the best of all runs. */
static double typical_best_sec(const tuner_runs *t) {
  double v[2 * TUNER_SEEDS];
  for (int mdl = 0; mdl < 2; mdl++)
    for (int sd = 0; sd < TUNER_SEEDS; sd++)
      v[mdl * TUNER_SEEDS + sd] = best_after(t->secs[mdl][sd], t->n[mdl][sd], t->trials, t->flops);
  double g = median(v, 2 * TUNER_SEEDS);
  return g > 0 ? t->flops / (g * 1e9) : 0;
}

static void report_tuner_progress(const tuner_runs *t, bcase *cs, int *nc) {
  double to90[2], to90t[2], half[2], full[2];
  char runs[2][160];
  double typical = typical_best_sec(t);
  for (int mdl = 0; mdl < 2; mdl++) {
    double tt[TUNER_SEEDS], ttt[TUNER_SEEDS], h[TUNER_SEEDS], f[TUNER_SEEDS];
    size_t off = 0;
    for (int sd = 0; sd < TUNER_SEEDS; sd++) {
      int k = t->n[mdl][sd];
      tt[sd] = trials_to(t->secs[mdl][sd], k, t->best);
      ttt[sd] = typical > 0 ? trials_to(t->secs[mdl][sd], k, typical) : k + 1;
      h[sd] = best_after(t->secs[mdl][sd], k, t->trials / 2, t->flops);
      f[sd] = best_after(t->secs[mdl][sd], k, t->trials, t->flops);
      off += (size_t)snprintf(runs[mdl] + off, sizeof runs[mdl] - off, "%s%.0f", sd ? "," : "",
                              f[sd]);
    }
    to90[mdl] = median(tt, TUNER_SEEDS);
    to90t[mdl] = median(ttt, TUNER_SEEDS);
    half[mdl] = median(h, TUNER_SEEDS);
    full[mdl] = median(f, TUNER_SEEDS);
  }
  double gbest = t->flops / t->best * 1e-9;
  printf("tuner %s %s (%d seeds): trials to 90%% of %.1f GFLOP/s: xgb-rank %.0f, random %.0f; "
         "best after %d: %.1f vs %.1f GFLOP/s; after %d: %.1f vs %.1f\n",
         t->task, t->shape, TUNER_SEEDS, gbest, to90[0], to90[1], t->trials / 2, half[0], half[1],
         t->trials, full[0], full[1]);
  char name[128], notes[600];
  snprintf(notes, sizeof notes,
           "mlc-tune (design space, evolutionary search, worker processes) with xgb-rank vs "
           "random scoring, seeds 1-%d, %d trials each, medians over seeds; best of all runs "
           "%.1f GFLOP/s; per-seed best after %d trials: xgb-rank %s, random %s",
           TUNER_SEEDS, t->trials, gbest, t->trials, runs[0], runs[1]);
  snprintf(name, sizeof name, "costmodel_tuner_trials_to_90pct_%s", t->base);
  bcase *bc = add_case(cs, nc, name, to90[0], "trials", "random_scores", to90[1]);
  snprintf(bc->notes, sizeof bc->notes, "%s; %d means not reached; lower is better", notes,
           t->trials + 1);
  double tg = typical > 0 ? t->flops / typical * 1e-9 : 0;
  printf("tuner %s %s: trials to 90%% of the median final best (%.1f GFLOP/s): xgb-rank %.0f, "
         "random %.0f\n",
         t->task, t->shape, tg, to90t[0], to90t[1]);
  snprintf(name, sizeof name, "costmodel_tuner_trials_to_90pct_median_best_%s", t->base);
  bc = add_case(cs, nc, name, to90t[0], "trials", "random_scores", to90t[1]);
  snprintf(bc->notes, sizeof bc->notes,
           "%s; target: 90%% of %.1f GFLOP/s, the median over all %d runs of their best after "
           "%d trials (the best of all runs can be one lucky timing on this busy machine); %d "
           "means not reached; lower is better",
           notes, tg, 2 * TUNER_SEEDS, t->trials, t->trials + 1);
  snprintf(name, sizeof name, "costmodel_tuner_best_after_%d_%s", t->trials / 2, t->base);
  bc = add_case(cs, nc, name, half[0], "GFLOP/s", "random_scores", half[1]);
  snprintf(bc->notes, sizeof bc->notes, "%s", notes);
  snprintf(name, sizeof name, "costmodel_tuner_best_after_%d_%s", t->trials, t->base);
  bc = add_case(cs, nc, name, full[0], "GFLOP/s", "random_scores", full[1]);
  snprintf(bc->notes, sizeof bc->notes, "%s", notes);
}

/* mlc-tune with xgb-rank and with random scoring, same seeds. Nothing is
 * reported when a run fails (e.g. mlc-worker not found). */
static void report_tuner_search(const char *task, const char *shape, int trials, bcase *cs,
                                int *nc) {
  static const char *const models[2] = {"xgb-rank", "random"};
  const mlc_task_def *d = mlc_task_find(task);
  int64_t dims[MLC_TASK_MAX_DIMS];
  if (!d || !mlc_task_parse_shape(d, shape, dims, NULL)) return;
  tuner_runs t = {.task = task, .shape = shape, .trials = trials, .best = INFINITY};
  t.flops = mlc_task_flops(d, dims);
  snprintf(t.base, sizeof t.base, "%s_%s", task, shape);
  for (char *p = t.base; *p; p++)
    if (*p == ',') *p = 'x';
  bool failed = false;
  /* Interleaved (seed 1 with the model, seed 1 random, seed 2 ...): the
   * load of this shared machine drifts, and should hit both alike. */
  for (int sd = 0; sd < TUNER_SEEDS; sd++)
    for (int mdl = 0; mdl < 2; mdl++) {
      t.secs[mdl][sd] = mlc_xmalloc(sizeof(double) * (size_t)(trials + 64));
      if (mdl == 1) t.feats[sd] = mlc_xmalloc(sizeof(mlc_features) * (size_t)(trials + 64));
      int k = failed ? -1
                     : tune_once(task, shape, trials, 1 + (uint64_t)sd, models[mdl],
                                 t.secs[mdl][sd], mdl == 1 ? t.feats[sd] : NULL);
      failed = failed || k <= 0;
      t.n[mdl][sd] = k > 0 ? k : 0;
      for (int i = 0; i < t.n[mdl][sd]; i++)
        t.best = t.secs[mdl][sd][i] < t.best ? t.secs[mdl][sd][i] : t.best;
    }
  if (failed) {
    fprintf(stderr, "bench_costmodel: a tuner run failed: no tuner cases for %s %s\n", task,
            shape);
  } else {
    report_tuner_progress(&t, cs, nc);
    report_tuner_candidates(&t, cs, nc);
  }
  for (int sd = 0; sd < TUNER_SEEDS; sd++) {
    for (int i = 0; i < t.n[1][sd]; i++) mlc_features_free(&t.feats[sd][i]);
    mlc_free(t.feats[sd]);
  }
  for (int mdl = 0; mdl < 2; mdl++)
    for (int sd = 0; sd < TUNER_SEEDS; sd++) mlc_free(t.secs[mdl][sd]);
}

/* ---- the report's sections ----------------------------------------------------------- */

static const char *const metric_names[3] = {"pairwise_acc", "spearman", "top32_in_64_recall"};

static void add_metrics(bcase *cs, int *nc, const char *prefix, metrics m, metrics rnd,
                        const char *notes) {
  double v[3] = {m.pairwise, m.spearman, m.recall}, b[3] = {rnd.pairwise, rnd.spearman, rnd.recall};
  for (int j = 0; j < 3; j++) {
    char name[96];
    snprintf(name, sizeof name, "%s_%s", prefix, metric_names[j]);
    bcase *bc = add_case(cs, nc, name, v[j], "fraction", "random_scores", b[j]);
    snprintf(bc->notes, sizeof bc->notes, "%s", notes);
  }
}

static void print_metrics(const char *what, const char *kind, metrics m) {
  printf("%s%-9s pairwise %.3f  spearman %.3f  top32-in-64 %.3f\n", what, kind, m.pairwise,
         m.spearman, m.recall);
}

/* Train on half of each workload's candidates, test on the other half. */
static void report_split(int n, const sample *s, bcase *cs, int *nc) {
  bool *test = mlc_xmalloc(sizeof(bool) * (size_t)n);
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 2024, 1);
  int n_test = 0;
  for (int i = 0; i < n; i++) n_test += test[i] = mlc_pcg32_bounded(&r, 2) == 0;
  enum { SEEDS = 5 };
  metrics rnd = {0, 0, 0};
  for (int sd = 0; sd < SEEDS; sd++) {
    metrics m1 = {0, 0, 0};
    run_kind(MLC_COSTMODEL_RANDOM, n, s, test, 100 + (uint64_t)sd, &m1, NULL);
    rnd.pairwise += m1.pairwise / SEEDS;
    rnd.spearman += m1.spearman / SEEDS;
    rnd.recall += m1.recall / SEEDS;
  }
  print_metrics("", "random", rnd);
  char notes[800];
  snprintf(notes, sizeof notes,
           "%d random schedules of %d workloads (matmul x3, conv2d, dense_bias_relu) timed "
           "in-process; trained on %d, tested on %d (metrics per workload, averaged); random: "
           "mean of %d seeds; %.300s",
           n, N_WORK, n - n_test, n_test, SEEDS, g_dataset_note);
  for (int k = MLC_COSTMODEL_XGB_AGG_RANK; k < MLC_COSTMODEL_KIND_COUNT; k++) {
    metrics m;
    double ms;
    if (!run_kind((mlc_costmodel_kind)k, n, s, test, 1, &m, &ms)) continue;
    const char *kn = mlc_costmodel_kind_name((mlc_costmodel_kind)k);
    print_metrics("", kn, m);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "costmodel_%s", kn);
    add_metrics(cs, nc, prefix, m, rnd, notes);
  }
  mlc_free(test);
}

/* Unseen workloads: train on four, test on the fifth, averaged. */
static void report_unseen(int n, const sample *s, bcase *cs, int *nc) {
  metrics rnd = {0, 0, 0};
  bool *held = mlc_xmalloc(sizeof(bool) * (size_t)n);
  char notes[800];
  snprintf(notes, sizeof notes,
           "leave-one-workload-out over %d workloads (%d measured random schedules): trained on "
           "the other four, metrics on the held-out one, averaged; %.300s",
           N_WORK, n, g_dataset_note);
  for (int k = MLC_COSTMODEL_RANDOM; k < MLC_COSTMODEL_KIND_COUNT; k++) {
    metrics avg = {0, 0, 0};
    bool ok = true;
    for (int w = 0; w < N_WORK && ok; w++) {
      for (int i = 0; i < n; i++) held[i] = s[i].work == w;
      metrics m;
      ok = run_kind((mlc_costmodel_kind)k, n, s, held, 1, &m, NULL);
      avg.pairwise += m.pairwise / N_WORK;
      avg.spearman += m.spearman / N_WORK;
      avg.recall += m.recall / N_WORK;
    }
    if (!ok) continue;
    const char *kn = mlc_costmodel_kind_name((mlc_costmodel_kind)k);
    print_metrics("unseen workload, ", kn, avg);
    if (k == MLC_COSTMODEL_RANDOM) {
      rnd = avg;
      continue;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "costmodel_%s_unseen_workload", kn);
    add_metrics(cs, nc, prefix, avg, rnd, notes);
  }
  mlc_free(held);
}

static void report_search(int n, const sample *s, bcase *cs, int *nc) {
  double sm, sr;
  char detail[400];
  search_efficiency(n, s, &sm, &sr, detail, sizeof detail);
  bcase *bc = add_case(cs, nc, "costmodel_offline_search_trials_to_90pct", sm, "trials",
                       "random_scores", sr);
  snprintf(bc->notes, sizeof bc->notes,
           "replayed search over each workload's measured pool (batches of 16 picked by "
           "xgb-rank, retrained each round), median of 5 seeds, mean over workloads; lower is "
           "better. model vs random: %s",
           detail);
}

static void report_repeatability(int n, const sample *s, bcase *cs, int *nc) {
  metrics rep;
  if (!repeatability(n, s, 0, 96, &rep)) return;
  printf("measurement repeatability (%s %s, 96 candidates timed again): pairwise %.3f  "
         "spearman %.3f\n",
         workloads[0].task, workloads[0].shape, rep.pairwise, rep.spearman);
  double v[2] = {rep.pairwise, rep.spearman};
  for (int j = 0; j < 2; j++) {
    char name[96];
    snprintf(name, sizeof name, "costmodel_remeasure_%s", metric_names[j]);
    bcase *bc = add_case(cs, nc, name, v[j], "fraction", NULL, 0);
    snprintf(bc->notes, sizeof bc->notes,
             "96 candidates of %s %s built and timed a second time, ranked against their "
             "recorded times: the ceiling a model can reach with this machine's timing noise",
             workloads[0].task, workloads[0].shape);
  }
}

static void report_speed(int n, const sample *s, bcase *cs, int *nc) {
  mlc_costmodel *trained = NULL, *all = NULL;
  int cores = mlc_target_host_cores();
  const char *load = load_now();
  char load_before[48];
  snprintf(load_before, sizeof load_before, "%s", load);
  double retrain_ms = retrain_speed(MLC_COSTMODEL_XGB_AGG_RANK, n, s, 0, &trained);
  double all_ms = retrain_speed(MLC_COSTMODEL_XGB_AGG_RANK, n, s, cores, &all);
  double predict_ms = predict_speed(trained);
  printf("retrain on 5000 records: %.0f ms (%d threads: %.0f ms); extract + score 2048 "
         "candidates: %.0f ms\n",
         retrain_ms, cores, all_ms, predict_ms);
  bcase *bc = add_case(cs, nc, "costmodel_retrain_5000_ms", retrain_ms, "ms", "all_cores",
                       all_ms);
  snprintf(bc->notes, sizeof bc->notes,
           "xgb-rank, 50 rounds, depth 6, hist; default threads (the cores the load average "
           "leaves idle, load %s before) vs all %d cores, same run",
           load_before, cores);
  bc = add_case(cs, nc, "costmodel_predict_2048_ms", predict_ms, "ms", NULL, 0);
  snprintf(bc->notes, sizeof bc->notes,
           "lower + extract features (OpenMP) + one XGBoost predict for 2048 random schedules "
           "of matmul 128^3, xgb-rank");
  mlc_costmodel_free(trained);
  mlc_costmodel_free(all);
}

/* ---- main ---------------------------------------------------------------------------- */

static const char *dataset_default(void) {
  const char *e = getenv("MLC_COSTMODEL_DATASET");
  return e && *e ? e : "build/bench/costmodel_dataset.db";
}

/* Opens the dataset database and tops it up to per_task records per
 * workload unless no_collect; then reads the samples. -1 on error. */
static int dataset(const char *path, int per_task, bool no_collect, sample *s) {
  mlc_error err;
  mlc_db *db = mlc_db_open(path, no_collect ? MLC_DB_EXISTING : MLC_DB_CREATE, &err);
  if (!db) {
    fprintf(stderr, "bench_costmodel: error: %s\n", err.msg);
    return -1;
  }
  if (!no_collect) {
    if (!collect(db, path, per_task, &err)) {
      fprintf(stderr, "bench_costmodel: error: collecting: %s\n", err.msg);
      mlc_db_close(db);
      return -1;
    }
  }
  double t0 = now();
  int n = load_samples(db, per_task, s, &err);
  if (n < 0) fprintf(stderr, "bench_costmodel: error: reading %s: %s\n", path, err.msg);
  else fprintf(stderr, "bench_costmodel: %d samples from %s (replayed, features in %.1f s)\n", n,
               path, now() - t0);
  mlc_db_close(db);
  return n;
}

static void free_samples(int n, sample *s) {
  for (int i = 0; i < n; i++) {
    mlc_features_free(&s[i].f);
    mlc_free(s[i].trace);
  }
  mlc_free(s);
}

int main(int argc, char **argv) {
  int per_task = 400;
  bool collect_only = false, no_collect = false;
  const char *out = "bench/results.json", *path = dataset_default();
  static const struct option opts[] = {{"per-task", required_argument, NULL, 'n'},
                                       {"out", required_argument, NULL, 'o'},
                                       {"dataset", required_argument, NULL, 'd'},
                                       {"collect-only", no_argument, NULL, 'c'},
                                       {"no-collect", no_argument, NULL, 'N'},
                                       {"quick", no_argument, NULL, 'q'},
                                       {"no-tuner", no_argument, NULL, 't'},
                                       {"tuner-1024", no_argument, NULL, 'T'},
                                       {"tuner-only", no_argument, NULL, 'O'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int c;
  bool tuner = true, tuner_1024 = false, tuner_only = false;
  while ((c = getopt_long(argc, argv, "n:o:d:qh", opts, NULL)) != -1) {
    switch (c) {
    case 'n': per_task = atoi(optarg); break;
    case 'o': out = optarg; break;
    case 'd': path = optarg; break;
    case 'c': collect_only = true; break;
    case 'N': no_collect = true; break;
    case 'q': per_task = 80; break;
    case 't': tuner = false; break;
    case 'T': tuner_1024 = true; break;
    case 'O': tuner_only = true; break;
    case 'h':
      printf("usage: bench_costmodel [options]\n"
             "  --dataset DB     the measured dataset, a tuning database (default\n"
             "                   $MLC_COSTMODEL_DATASET, else build/bench/costmodel_dataset.db);\n"
             "                   missing records are measured into it first\n"
             "  --per-task N     records per workload (400; 5 workloads: 2,000)\n"
             "  --collect-only   measure the dataset into DB and stop\n"
             "  --no-collect     use only what DB holds (it must exist)\n"
             "  --quick          80 per workload\n"
             "  --out FILE       results (bench/results.json)\n"
             "  --no-tuner       skip the mlc-tune runs (xgb-rank vs random, matmul 256^3)\n"
             "  --tuner-1024     also compare on matmul 1024^3 (slow)\n"
             "  --tuner-only     only the mlc-tune comparison\n");
      return 0;
    default:
      fprintf(stderr, "bench_costmodel: error: bad usage (try --help)\n");
      return 2;
    }
  }
  if (per_task < 10) {
    fprintf(stderr, "bench_costmodel: error: --per-task must be at least 10\n");
    return 2;
  }
  sample *s = mlc_xmalloc(sizeof(sample) * (size_t)per_task * N_WORK);
  int n = dataset(path, per_task, no_collect, s);
  if (n < 0 || collect_only) {
    free_samples(n > 0 ? n : 0, s);
    return n < 0;
  }
  if (n < 2 * 64) {
    fprintf(stderr, "bench_costmodel: only %d samples in %s: nothing to evaluate\n", n, path);
    free_samples(n, s);
    return 1;
  }
  snprintf(g_dataset_note, sizeof g_dataset_note, "dataset %.200s (%d records) read at load %s",
           path, n, load_now());
  bcase *cs = mlc_xmalloc(sizeof(bcase) * 48);
  int nc = 0;
  if (!tuner_only) {
    report_split(n, s, cs, &nc);
    report_unseen(n, s, cs, &nc);
    report_search(n, s, cs, &nc);
    report_repeatability(n, s, cs, &nc);
    report_speed(n, s, cs, &nc);
  }
  if (tuner) report_tuner_search("matmul", "256,256,256", 128, cs, &nc);
  if (tuner_1024) report_tuner_search("matmul", "1024,1024,1024", 64, cs, &nc);
  bench_case *flat = mlc_xmalloc(sizeof(bench_case) * (size_t)nc);
  for (int i = 0; i < nc; i++) {
    size_t len = strlen(cs[i].notes);
    snprintf(cs[i].notes + len, sizeof cs[i].notes - len, "%sload average %s when reported",
             len ? "; " : "", cs[i].load);
    flat[i] = cs[i].c;
  }
  mlc_error err;
  bool ok = bench_write_results(out, nc, flat, &err);
  if (!ok) fprintf(stderr, "bench_costmodel: error: %s\n", err.msg);
  free_samples(n, s);
  mlc_free(cs);
  mlc_free(flat);
  return ok ? 0 : 1;
}
